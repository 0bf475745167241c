package main

import "testing"

// TestPageFinishedCallBarIsDone: the card of a call that succeeded shows a
// full bar labelled done, also when its last progress report said 18% (a
// search_text that stops at its match limit): before, the label stayed at
// 18%. A call that ended otherwise keeps its bar and label where it
// stopped. Runs app.js in Node (skipped without it).
func TestPageFinishedCallBarIsDone(t *testing.T) {
	runAppJS(t, `
const view = window.toolstream.progressView;
if (typeof view !== 'function') { console.log('FAIL the page has no progressView'); process.exit(0); }
const show = (v) => JSON.stringify({ width: v.width, label: v.label, finished: v.finished });
const cases = [
  [{ fraction: 0.18 }, true, 'success', { width: 1, label: 'done', finished: true }],
  [{ message: 'no fraction' }, true, 'success', { width: 1, label: 'done', finished: true }],
  [{ fraction: 0.18 }, true, 'interrupted', { width: 0.18, label: '18%', finished: true }],
  [{ fraction: 0.18 }, false, undefined, { width: 0.18, label: '18%', finished: false }],
];
for (const [p, final, state, want] of cases) {
  const got = show(view(p, final, state));
  if (got !== JSON.stringify(want)) console.log('FAIL ' + JSON.stringify([p, final, state]) + ': ' + got + ', want ' + JSON.stringify(want));
}
`)
}
