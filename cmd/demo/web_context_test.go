package main

import "testing"

// TestPageShowsContextCut: a context_cut event (package agent's context
// policy) puts a line in its turn saying what the model is not sent, and
// marks the calls left out or cleared, each with the turn it happened in;
// a call left out stays so when a later event clears it; a body that is
// not one is ignored. Runs app.js in Node (skipped without it).
func TestPageShowsContextCut(t *testing.T) {
	runAppJS(t, `
const ts = window.toolstream;
if (typeof ts.contextCutText !== 'function' || typeof ts.handle !== 'function') { console.log('FAIL the page has no contextCutText or handle'); process.exit(0); }
const want = (got, exp, what) => { if (got !== exp) console.log('FAIL ' + what + ': ' + JSON.stringify(got) + ', want ' + JSON.stringify(exp)); };
const S = ts.newSessionState('tour');
ts.handle(S, 'context_cut', { seq: 40, data: { turn: 6, messages: 19, sent: 17, dropped: 3, summarized: 3, cleared: 0,
  dropped_calls: ['call_q', 'call_0'], bytes_before: 7100, bytes_after: 6500 } });
const t = S.turns.get(6);
if (!t) { console.log('FAIL no turn 6'); process.exit(0); }
want(ts.contextCutText(t.cut), 'Context cut: 3 of 19 messages left out, 3 of them summarized. The model is sent 6.3 KiB of 6.9 KiB.', 'turn 6');
want(JSON.stringify(S.cutCalls.get('call_q')), '{"how":"dropped","turn":6}', 'call_q');
ts.handle(S, 'context_cut', { data: { turn: 7, messages: 21, dropped: 3, cleared: 2, cleared_calls: ['call_q', 'call_7'],
  summary_error: 'the summarizer is down', bytes_before: 90000, bytes_after: 40000, budget: 32768 } });
want(JSON.stringify(S.cutCalls.get('call_q')), '{"how":"dropped","turn":6}', 'call_q after a later clear');
want(JSON.stringify(S.cutCalls.get('call_7')), '{"how":"cleared","turn":7}', 'call_7');
want(ts.contextCutText(S.turns.get(7).cut), 'Context cut: 3 of 21 messages left out (no summary: the summarizer is down); 2 old tool results cleared. The model is sent 39.1 KiB of 87.9 KiB, over the budget of 32.0 KiB.', 'turn 7');
for (const bad of [null, 'x', [], { turn: 'one' }, {}]) {
  ts.handle(S, 'context_cut', { data: bad });
  want(ts.contextCutText(bad), '', 'text of ' + JSON.stringify(bad));
}
want(S.turns.size, 2, 'turns after bad bodies');
want(ts.contextCutText({ turn: 1, dropped: 0, cleared: 0 }), '', 'a cut of nothing');
`)
}
