// The toolstream demo's live page: it draws one session's tool calls from
// the Server-Sent Events bridge (docs/events.md). Everything on the page is
// rebuilt from the events, which the server replays from the start of the
// session on every new connection; the page keeps no state of its own
// besides the selected session. Event data is only ever put into the page
// as text (textContent), never as HTML.
'use strict';

(() => {
  const FINAL_STATES = ['success', 'error', 'denied', 'interrupted', 'timeout'];
  const STATE_ORDER = ['queued', 'running', 'waiting', ...FINAL_STATES];
  const CALL_TYPES = ['start', 'progress', 'delta', 'suspend', 'result'];
  const EVENT_TYPES = [...CALL_TYPES, 'approval', 'groups', 'skills', 'note', 'context_cut', 'turn_end', 'answer', 'run_error'];
  const INFO_EVERY_MS = 5000;
  // A result shows at most this many characters: a result of many MiB is
  // kept whole in memory (rebuilt from its deltas), but drawing it all would
  // freeze the page.
  const SHOW_MAX = 100000;

  // ---------------------------------------------------------------- helpers

  const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const str = (v) => (typeof v === 'string' ? v : '');
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const strList = (v) => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : []);
  const clamp01 = (x) => Math.min(1, Math.max(0, x));
  const byId = (id) => document.getElementById(id);

  // h builds an element. Strings among the children become text nodes.
  function h(tag, props, ...kids) {
    const e = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (const kid of kids) if (kid !== undefined && kid !== null && kid !== false) e.append(kid);
    return e;
  }

  function setText(e, s) {
    if (e && e.textContent !== s) e.textContent = s;
  }

  function compactJSON(v) {
    try {
      const s = JSON.stringify(v);
      return s === undefined ? 'null' : s;
    } catch {
      return String(v);
    }
  }

  // shownJSON writes, in JSON text, the characters that change how text
  // reads without showing themselves (bidirectional controls such as
  // U+202E, zero-width and other invisible characters, controls, line
  // breaks, spaces other than U+0020, variation selectors) as \u escapes:
  // the same value, which a person sees. Package interceptors shows them
  // so in an approval's texts (display.go); arguments, decoded here, need
  // it again. Outside its strings JSON text is ASCII and JSON.stringify
  // escapes C0 controls in strings: the space and newline of indentation
  // are left alone.
  const HIDDEN = /[\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Variation_Selector}]/gu;
  function shownJSON(s) {
    return s.replace(HIDDEN, (ch) => (ch === ' ' || ch === '\n' ? ch
      : Array.from({ length: ch.length }, (_, i) => '\\u' + ch.charCodeAt(i).toString(16).padStart(4, '0')).join('')));
  }

  // prettyJSON puts what fits on one line on one line: arrays of small
  // objects come out one object per line.
  function prettyJSON(v, indent = '', width = 80) {
    const flat = compactJSON(v);
    if (v === null || typeof v !== 'object' || flat.length + indent.length <= width) return flat;
    const inner = indent + '  ';
    if (Array.isArray(v)) {
      if (v.length === 0) return '[]';
      return '[\n' + v.map((x) => inner + prettyJSON(x, inner, width)).join(',\n') + '\n' + indent + ']';
    }
    const keys = Object.keys(v);
    if (keys.length === 0) return '{}';
    return '{\n' + keys.map((k) => {
      const key = JSON.stringify(k) + ': ';
      return inner + key + prettyJSON(v[k], inner, width - key.length);
    }).join(',\n') + '\n' + indent + '}';
  }

  function truncate(s, n) {
    return s.length <= n ? s : s.slice(0, n - 1) + '…';
  }

  // b64Len is the number of bytes a base64 string (padded or not) holds.
  function b64Len(s) {
    const t = str(s).replace(/\s+/g, '').replace(/=+$/, '');
    return Math.floor((t.length * 3) / 4);
  }

  // partText renders one content part as text, after prev (what is shown
  // already): text as it is, JSON pretty-printed and binary as a note, each
  // of the latter on lines of their own.
  function partText(part, prev) {
    if (!isObj(part)) return '';
    const sep = prev && !prev.endsWith('\n') ? '\n' : '';
    switch (part.type) {
      case 'text':
        return str(part.text);
      case 'json': {
        const v = part.json === undefined ? null : part.json;
        const flat = compactJSON(v);
        // Pretty-printing a large value costs more than showing it is worth.
        return sep + (flat.length > SHOW_MAX ? flat : prettyJSON(v)) + '\n';
      }
      case 'binary':
        return sep + `[binary ${str(part.media_type) || 'application/octet-stream'}, ${b64Len(part.data)} bytes]\n`;
      default:
        return sep + `[${str(part.type) || 'unknown'} part]\n`;
    }
  }

  // shownText renders parts as text, cut after SHOW_MAX characters; total is
  // the length of the whole rendering (as far as it is cheap to know).
  function shownText(parts) {
    let s = '';
    let total = 0;
    for (const p of parts) {
      if (s.length >= SHOW_MAX) {
        total += partLength(p);
        continue;
      }
      const t = partText(p, s);
      total += t.length;
      s += t.length > SHOW_MAX - s.length ? t.slice(0, SHOW_MAX - s.length) : t;
    }
    return { text: s, total };
  }

  function partLength(p) {
    if (!isObj(p)) return 0;
    if (p.type === 'text') return str(p.text).length;
    if (p.type === 'json') return compactJSON(p.json === undefined ? null : p.json).length + 1;
    return 40;
  }

  // addPart adds a part to content by the protocol's rule: empty parts add
  // nothing, adjacent text parts join (kept as pieces, joined once).
  function addPart(content, part) {
    if (!isObj(part)) return;
    if (part.type === 'text') {
      if (str(part.text) === '') return;
      const last = content[content.length - 1];
      if (last && last.type === 'text') last.pieces.push(part.text);
      else content.push({ type: 'text', pieces: [part.text] });
      return;
    }
    if (part.type === 'json' && part.json === undefined) return;
    if (part.type === 'binary' && !str(part.data)) return;
    content.push(part);
  }

  function joinText(content) {
    return content.map((p) => (p.pieces ? { type: 'text', text: p.pieces.join('') } : p));
  }

  // partOfChunks parses the JSON text that a part's chunks make up.
  function partOfChunks(data) {
    try {
      const p = JSON.parse(data.join(''));
      return isObj(p) ? p : null;
    } catch {
      return null;
    }
  }

  function fmtDuration(ms) {
    const v = num(ms);
    if (v === undefined) return '';
    if (v < 1) return `${v.toFixed(2)} ms`;
    if (v < 1000) return `${v < 10 ? v.toFixed(1) : Math.round(v)} ms`;
    if (v < 60000) return `${(v / 1000).toFixed(v < 10000 ? 2 : 1)} s`;
    const m = Math.floor(v / 60000);
    return `${m} min ${Math.round((v % 60000) / 1000)} s`;
  }

  function fmtClock(iso) {
    const d = new Date(str(iso));
    return Number.isNaN(d.getTime()) ? '' : d.toLocaleTimeString();
  }

  // ------------------------------------------------------------ page state

  const page = {
    session: '',        // the selected session
    follow: true,       // follow the demo's current session (no ?session= chosen)
    info: null,         // the last /api/info answer
    es: null,           // the EventSource
    retryTimer: 0,
    S: null,            // everything drawn from the selected session's events
  };

  function newSessionState(session) {
    return {
      session,
      lastId: 0,
      events: 0,
      calls: new Map(),     // call id -> call
      turns: new Map(),     // turn number -> turn
      notes: new Map(),     // turn number -> what the scripted turn shows
      callTurn: new Map(),  // call id -> turn number
      cutCalls: new Map(),  // call id -> {how: 'dropped'|'cleared', turn}: out of the model's context
      groups: null,         // the latest groups event's data
      groupsSeq: -1,
      skills: new Map(),    // skill name -> {path, groups, call}
      skillsLoaded: [],
      skillsSeq: -1,
      done: null,
      dirty: new Set(),     // calls to redraw
      dirtySide: true,
    };
  }

  // ----------------------------------------------------------- the events

  function onMessage(e) {
    const S = page.S;
    if (!S || e.currentTarget !== page.es) return;
    const id = Number(e.lastEventId);
    if (Number.isFinite(id) && id > 0) {
      if (id <= S.lastId) return; // seen already (a replay overlapping a resume)
      S.lastId = id;
    }
    let env;
    try {
      env = JSON.parse(e.data);
    } catch {
      return;
    }
    if (!isObj(env)) return;
    if (env.v !== undefined && env.v !== 1) {
      console.warn('toolstream: ignoring an event of protocol version', env.v);
      return;
    }
    S.events++;
    try {
      handle(S, e.type, env);
    } catch (err) {
      console.error('toolstream: event not handled', e.type, err);
    }
    scheduleRender();
  }

  function handle(S, type, env) {
    S.dirtySide = true;
    if (CALL_TYPES.includes(type)) return onCallEvent(S, type, env);
    switch (type) {
      case 'approval': return onApproval(S, env);
      case 'groups': return onGroups(S, env);
      case 'skills': return onSkills(S, env);
      case 'note': return onNote(S, env);
      case 'context_cut': return onContextCut(S, env);
      case 'turn_end': return onTurn(S, env);
      case 'answer': return onDone(S, env);
      case 'run_error': return onRunError(S, env);
      default: return undefined; // a type this page does not know
    }
  }

  function getCall(S, id, tool) {
    let c = S.calls.get(id);
    if (!c) {
      c = {
        id, tool: '', args: undefined, hasArgs: false,
        activeSeq: 0, suspendSeq: 0, suspendReason: '',
        progress: null, progressSeq: -1, hadProgress: false, dropped: 0,
        deltas: [], deltaSeqs: new Set(), resets: 0, shown: '', pending: '', rebuild: false,
        run: null, streamed: 0, clipped: false,
        result: null, content: null, view: null, approval: null, approvalSeq: -1,
        startTime: '', ui: null,
      };
      S.calls.set(id, c);
    }
    if (tool && !c.tool) c.tool = tool;
    S.dirty.add(c);
    return c;
  }

  function setArgs(c, args) {
    let v = args;
    if (typeof v === 'string') {
      try { v = JSON.parse(v); } catch { /* keep the string */ }
    }
    c.args = v;
    c.hasArgs = true;
  }

  function onCallEvent(S, type, env) {
    const id = str(env.call);
    if (!id) return;
    const c = getCall(S, id, str(env.tool));
    const seq = num(env.seq) || 0;
    switch (type) {
      case 'start': {
        c.activeSeq = Math.max(c.activeSeq, seq || 1);
        c.startTime = str(env.time);
        const b = env.start;
        if (isObj(b) && b.args !== undefined) setArgs(c, b.args);
        break;
      }
      case 'progress': {
        const p = env.progress;
        if (!isObj(p)) break;
        c.activeSeq = Math.max(c.activeSeq, seq);
        c.hadProgress = true;
        c.dropped += num(p.dropped) || 0;
        if (!seq || seq >= c.progressSeq) {
          c.progress = p;
          c.progressSeq = seq;
        }
        break;
      }
      case 'delta':
        c.activeSeq = Math.max(c.activeSeq, seq);
        addDelta(c, seq, env.reset === true, env.delta, isObj(env.chunk) ? env.chunk : null);
        break;
      case 'suspend':
        c.suspendSeq = Math.max(c.suspendSeq, seq || c.activeSeq + 1);
        c.suspendReason = isObj(env.suspend) ? str(env.suspend.reason) : '';
        break;
      case 'result':
        if (isObj(env.result)) {
          c.result = env.result;
          // The result holds the content now; one too large for a message
          // left it out: then the content is what the deltas add up to.
          c.content = env.result.content_omitted === true ? contentOfDeltas(c)
            : Array.isArray(env.result.content) ? env.result.content : [];
          c.view = null;
          c.deltas = [];
          c.deltaSeqs.clear();
          c.run = null;
        }
        break;
      default:
    }
  }

  // addDelta keeps the deltas in seq order (a publish retried after a
  // reconnect may arrive late) and redraws only what it must. A part too
  // large for one message comes as chunks: their data, joined, is the part's
  // JSON text.
  function addDelta(c, seq, reset, part, chunk) {
    if (c.result) return; // the result's content is authoritative
    if (seq) {
      if (c.deltaSeqs.has(seq)) return;
      c.deltaSeqs.add(seq);
    }
    if (reset) c.resets++;
    const d = { seq, reset, part: chunk ? null : part, chunk };
    const last = c.deltas[c.deltas.length - 1];
    if (!last || !seq || !last.seq || seq > last.seq) {
      c.deltas.push(d);
      if (reset) {
        c.rebuild = true;
        c.run = null;
      }
      if (chunk) {
        if (chunk.index === 0) c.run = { count: chunk.count, next: 0, data: [] };
        if (!c.run || chunk.index !== c.run.next || chunk.count !== c.run.count) {
          c.run = null;
          c.rebuild = true; // a chunk out of place: rebuild from what came
          return;
        }
        c.run.data.push(str(chunk.data));
        c.run.next++;
        if (c.run.next < c.run.count) return;
        d.part = partOfChunks(c.run.data); // kept on the last chunk
        c.run = null;
        if (!d.part) return;
      }
      if (!c.rebuild) streamPart(c, d.part);
    } else {
      let i = c.deltas.findIndex((x) => x.seq && x.seq > seq);
      if (i < 0) i = c.deltas.length;
      c.deltas.splice(i, 0, d);
      c.rebuild = true;
    }
  }

  // streamPart queues a part's text for drawing, up to SHOW_MAX characters.
  function streamPart(c, part) {
    const t = partText(part, c.pending ? c.pending.slice(-1) : c.shown.slice(-1)); // only the last character matters
    c.streamed += t.length;
    const room = SHOW_MAX - c.shown.length - c.pending.length;
    if (room <= 0) {
      c.clipped = c.clipped || t.length > 0;
      return;
    }
    if (t.length > room) c.clipped = true;
    c.pending += t.length > room ? t.slice(0, room) : t;
  }

  // contentOfDeltas adds up the deltas after the last reset, chunks put
  // back together.
  function contentOfDeltas(c) {
    let from = 0;
    c.deltas.forEach((d, i) => { if (d.reset) from = i; });
    const content = [];
    let run = null;
    for (const d of c.deltas.slice(from)) {
      if (!d.chunk) {
        run = null;
        addPart(content, d.part);
        continue;
      }
      if (d.chunk.index === 0) run = { count: d.chunk.count, next: 0, data: [] };
      if (!run || d.chunk.index !== run.next || d.chunk.count !== run.count) {
        run = null;
        continue;
      }
      run.data.push(str(d.chunk.data));
      run.next++;
      if (run.next === run.count) {
        addPart(content, d.part || partOfChunks(run.data));
        run = null;
      }
    }
    return joinText(content);
  }

  function onApproval(S, env) {
    const d = isObj(env.data) ? env.data : null;
    if (!d) return;
    const id = str(env.call) || str(d.call);
    if (!id) return;
    const c = getCall(S, id, str(env.tool) || str(d.tool));
    const status = str(d.status) || 'pending';
    // A decision is never undone by a late "pending"; within a call, seq
    // orders the events.
    if (c.approval && c.approval.status !== 'pending' && status === 'pending') return;
    const seq = str(env.call) ? num(env.seq) : undefined;
    if (seq !== undefined && seq < c.approvalSeq) return;
    c.approval = { ...d, status };
    c.approvalSeq = seq !== undefined ? seq : c.approvalSeq;
    if (status !== 'pending') {
      // the decision ends the suspension the request caused
      c.activeSeq = Math.max(c.activeSeq, c.suspendSeq, seq || 0);
    }
    if (c.tool === '' && str(d.tool)) c.tool = str(d.tool);
    if (Array.isArray(d.calls)) c.batch = true; // a whole batch's request: its card has no call events
    if (!c.hasArgs && d.args !== undefined) setArgs(c, d.args);
  }

  function sessionSeq(env, fallback) {
    const s = num(env.seq);
    return s === undefined ? fallback + 1 : s;
  }

  function onGroups(S, env) {
    const d = env.data;
    if (!isObj(d)) return;
    const seq = sessionSeq(env, S.groupsSeq);
    if (seq < S.groupsSeq) return;
    S.groupsSeq = seq;
    S.groups = d;
  }

  function onSkills(S, env) {
    const d = env.data;
    if (!isObj(d)) return;
    const name = str(d.skill);
    if (name) S.skills.set(name, { path: str(d.path), groups: strList(d.groups), call: str(d.call) });
    const seq = sessionSeq(env, S.skillsSeq);
    if (seq < S.skillsSeq) return;
    S.skillsSeq = seq;
    const loaded = strList(d.loaded);
    S.skillsLoaded = loaded.length || !name ? loaded : [...new Set([...S.skillsLoaded, name])];
  }

  // A note (the demo's own event) says what a scripted turn shows; it
  // comes just before the turn's turn_end.
  function onNote(S, env) {
    const d = env.data;
    if (!isObj(d) || num(d.turn) === undefined) return;
    S.notes.set(num(d.turn), str(d.note));
  }

  // context_cut (package agent's context policy): what the turn's request
  // leaves out of the conversation. The turn shows it; the cards of the
  // calls left out or cleared say so.
  function onContextCut(S, env) {
    const d = env.data;
    if (!isObj(d) || num(d.turn) === undefined) return;
    const n = num(d.turn);
    const t = getTurn(S, n);
    t.cut = d;
    t.dirty = true;
    const mark = (ids, how) => {
      for (const id of strList(ids)) {
        const was = S.cutCalls.get(id);
        if (was && was.how === 'dropped') continue; // dropped says more than cleared
        S.cutCalls.set(id, { how, turn: n });
        const c = S.calls.get(id);
        if (c) S.dirty.add(c);
      }
    };
    mark(d.cleared_calls, 'cleared');
    mark(d.dropped_calls, 'dropped');
  }

  // contextCutText says in a line what a context_cut event's body says.
  function contextCutText(d) {
    if (!isObj(d)) return '';
    const parts = [];
    const dropped = num(d.dropped) || 0;
    const cleared = num(d.cleared) || 0;
    if (dropped > 0) {
      let s = `${dropped} of ${num(d.messages) || 0} messages left out`;
      if ((num(d.summarized) || 0) > 0) s += `, ${num(d.summarized)} of them summarized`;
      else if (str(d.summary_error)) s += ` (no summary: ${str(d.summary_error)})`;
      parts.push(s);
    }
    if (cleared > 0) parts.push(`${cleared} old tool result${cleared === 1 ? '' : 's'} cleared`);
    if (!parts.length) return '';
    const before = num(d.bytes_before) || 0;
    const after = num(d.bytes_after) || 0;
    const budget = num(d.budget) || 0;
    return `Context cut: ${parts.join('; ')}. The model is sent ${fmtBytes(after)} of ${fmtBytes(before)}` +
      (budget > 0 && after > budget ? `, over the budget of ${fmtBytes(budget)}.` : '.');
  }

  // turn_end (package agent): the model's whole reply; its calls run next.
  function onTurn(S, env) {
    const d = env.data;
    if (!isObj(d)) return;
    let n = num(d.turn);
    if (n === undefined) n = S.turns.size ? Math.max(...S.turns.keys()) + 1 : 1;
    const t = getTurn(S, n);
    t.note = S.notes.get(n) || '';
    t.text = str(d.text);
    t.model = str(d.model);
    t.time = str(env.time);
    t.callIds = [];
    for (const ci of Array.isArray(d.calls) ? d.calls : []) {
      if (!isObj(ci) || !str(ci.id)) continue;
      const c = getCall(S, str(ci.id), str(ci.name));
      if (!c.hasArgs && ci.arguments !== undefined) setArgs(c, ci.arguments);
      t.callIds.push(c.id);
      S.callTurn.set(c.id, n);
    }
    t.dirty = true;
  }

  function onDone(S, env) {
    S.done = isObj(env.data) ? env.data : {};
  }

  // run_error (package agent): the run ended without an answer.
  function onRunError(S, env) {
    const d = isObj(env.data) ? env.data : {};
    S.done = { text: '(the run ended: ' + str(d.error) + ')', turns: num(d.turn) };
  }

  // ------------------------------------------------------------- the state

  function callState(c) {
    if (c.result) return str(c.result.state) || 'error';
    if (c.batch && c.approval && c.approval.status !== 'pending') return c.approval.status === 'approved' ? 'success' : 'denied';
    if (c.approval && c.approval.status === 'pending') return 'waiting';
    if (c.suspendSeq > c.activeSeq) return 'waiting';
    if (c.activeSeq > 0 || c.suspendSeq > 0 || c.deltas.length) return 'running';
    return 'queued';
  }

  // -------------------------------------------------------------- drawing

  let renderQueued = false;

  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(flush);
    setTimeout(flush, 120); // hidden tabs get no animation frames
  }

  function flush() {
    if (!renderQueued) return;
    renderQueued = false;
    const S = page.S;
    if (!S) return;
    const root = document.documentElement;
    const atBottom = window.innerHeight + window.scrollY >= root.scrollHeight - 60;
    let newTurn = false;
    for (const t of S.turns.values()) {
      if (!t.dirty) continue;
      if (!t.el) newTurn = true;
      try { drawTurn(S, t); } catch (err) { console.error('toolstream: turn not drawn', err); }
    }
    for (const c of S.dirty) {
      try { drawCall(S, c); } catch (err) { console.error('toolstream: call not drawn', err); }
    }
    S.dirty.clear();
    if (S.dirtySide) {
      S.dirtySide = false;
      try { drawSide(S); } catch (err) { console.error('toolstream: side panel not drawn', err); }
    }
    byId('empty-state').hidden = S.turns.size > 0 || S.calls.size > 0;
    if (newTurn && atBottom && S.events > 0) {
      window.scrollTo({ top: root.scrollHeight, behavior: 'auto' });
    }
  }

  function getTurn(S, n) {
    let t = S.turns.get(n);
    if (!t) {
      t = { n, note: '', text: '', model: '', time: '', callIds: [], cut: null, el: null, dirty: true };
      S.turns.set(n, t);
    }
    return t;
  }

  function drawTurn(S, t) {
    t.dirty = false;
    if (!t.el) {
      const ui = {
        note: h('span', { class: 'turn-note' }),
        time: h('span', { class: 'turn-time' }),
        count: h('span', { class: 'turn-count' }),
        model: h('span', { class: 'speaker' }),
        text: h('p', { class: 'model-text' }),
        calls: h('div', { class: 'calls' }),
        cut: h('p', { class: 'context-cut', hidden: true, title: 'The context policy left part of the conversation out of this turn\'s request; the conversation itself keeps it.' }),
      };
      ui.say = h('div', { class: 'say' }, ui.model, ui.text);
      t.el = h('section', { class: 'turn', 'data-turn': String(t.n) },
        h('div', { class: 'turn-head' },
          h('span', { class: 'turn-n', text: `Turn ${t.n}` }), ui.note, h('span', { class: 'spacer' }), ui.count, ui.time),
        ui.cut, ui.say, ui.calls);
      t.ui = ui;
      const timeline = byId('timeline');
      const after = [...timeline.children].find((x) => Number(x.dataset.turn) > t.n);
      timeline.insertBefore(t.el, after || null);
    }
    const ui = t.ui;
    setText(ui.note, t.note);
    setText(ui.cut, contextCutText(t.cut));
    ui.cut.hidden = !ui.cut.textContent;
    setText(ui.time, fmtClock(t.time));
    setText(ui.count, t.callIds.length ? `${t.callIds.length} call${t.callIds.length === 1 ? '' : 's'}` : 'answer');
    setText(ui.model, t.model || 'model');
    setText(ui.text, t.text);
    ui.say.hidden = !t.text;
    t.el.classList.toggle('no-calls', t.callIds.length === 0);
    for (const id of t.callIds) {
      const c = S.calls.get(id);
      if (c) S.dirty.add(c); // placed under this turn by drawCall
    }
  }

  function buildCard(c) {
    const ui = {};
    ui.tool = h('span', { class: 'tool' });
    ui.id = h('span', { class: 'call-id' });
    ui.resets = h('span', { class: 'resets', hidden: true, title: 'An interceptor retried the tool or replaced its result: the output shown before was discarded (a reset delta).' });
    ui.duration = h('span', { class: 'duration' });
    ui.cut = h('span', { class: 'cut-badge', hidden: true });
    ui.state = h('span', { class: 'state' });
    ui.args = h('div', { class: 'args' });
    ui.bar = h('div', { class: 'bar' });
    ui.pct = h('span', { class: 'pct' });
    ui.pmsg = h('span', { class: 'pmsg' });
    ui.progress = h('div', { class: 'progress', hidden: true },
      h('div', { class: 'track' }, ui.bar), ui.pct, ui.pmsg);
    ui.waiting = h('div', { class: 'waiting-note', hidden: true });
    ui.approval = null;
    ui.result = h('pre', { class: 'result', tabindex: '0' });
    ui.clip = h('p', { class: 'clip-note', hidden: true });
    ui.meta = h('div', { class: 'meta', hidden: true });
    ui.card = h('article', { class: 'call', 'data-call': c.id, 'data-state': 'queued' },
      h('header', { class: 'call-head' }, ui.tool, ui.id, h('span', { class: 'spacer' }), ui.resets, ui.cut, ui.duration, ui.state),
      ui.args, ui.progress, ui.waiting, ui.result, ui.clip, ui.meta);
    c.ui = ui;
    return ui;
  }

  function drawCall(S, c) {
    const ui = c.ui || buildCard(c);
    placeCard(S, c);
    const state = callState(c);
    const final = !!c.result;
    if (ui.card.dataset.state !== state) ui.card.dataset.state = state;
    ui.card.classList.toggle('final', final);
    setText(ui.tool, c.tool || '(unknown tool)');
    setText(ui.id, c.id);
    setText(ui.state, state);
    ui.state.dataset.state = state;
    if (final) {
      const r = c.result;
      setText(ui.duration, fmtDuration(r.duration_ms));
      ui.state.title = str(r.error);
    } else {
      setText(ui.duration, '');
      ui.state.title = '';
    }
    if (c.resets > 0) {
      ui.resets.hidden = false;
      setText(ui.resets, c.resets === 1 ? 'output reset' : `output reset ×${c.resets}`);
    } else {
      ui.resets.hidden = true;
    }
    drawCut(S, c, ui);
    drawArgs(c, ui);
    drawProgress(c, ui, state);
    if (state === 'waiting' && !(c.approval && c.approval.status === 'pending')) {
      ui.waiting.hidden = false;
      setText(ui.waiting, c.suspendReason === 'external'
        ? 'Suspended: waiting for a result from outside the process (an external tool).'
        : `Suspended: waiting${c.suspendReason ? ` (${c.suspendReason})` : ''}.`);
    } else {
      ui.waiting.hidden = true;
    }
    drawApproval(S, c, ui);
    drawResult(c, ui);
    drawMeta(c, ui);
  }

  // drawCut marks a call the context policy left out of the model's
  // requests (with its result) or whose result it cleared.
  function drawCut(S, c, ui) {
    const cut = S.cutCalls.get(c.id);
    ui.cut.hidden = !cut;
    if (!cut) return;
    setText(ui.cut, cut.how === 'dropped' ? `out of context from turn ${cut.turn}` : `result cleared from turn ${cut.turn}`);
    ui.cut.title = cut.how === 'dropped'
      ? 'From this turn on, the model is no longer sent this call or its result (the conversation keeps them).'
      : 'From this turn on, the model is sent a short note instead of this result (the conversation keeps it whole).';
  }

  function placeCard(S, c) {
    const card = c.ui.card;
    const n = S.callTurn.get(c.id);
    const t = n === undefined ? undefined : S.turns.get(n);
    if (t && t.el) {
      // keep the turn's calls in the order the model asked for them,
      // moving cards only when needed (a move resets scrolling and focus)
      let prev = null;
      for (const id of t.callIds) {
        const o = S.calls.get(id);
        if (!o || !o.ui) continue;
        const want = prev ? prev.nextElementSibling : t.ui.calls.firstElementChild;
        if (want !== o.ui.card) t.ui.calls.insertBefore(o.ui.card, want);
        prev = o.ui.card;
      }
    } else if (card.parentElement !== byId('other-calls')) {
      byId('other-calls').append(card);
    }
    byId('other').hidden = byId('other-calls').childElementCount === 0;
  }

  function drawArgs(c, ui) {
    const key = c.hasArgs ? compactJSON(c.args) : '';
    if (ui.argsKey === key) return;
    ui.argsKey = key;
    ui.args.replaceChildren();
    if (!c.hasArgs) return;
    if (key.length <= 96) {
      ui.args.append(h('code', { class: 'args-short', text: shownJSON(key) }));
      return;
    }
    ui.args.append(h('details', null,
      h('summary', { title: 'show all arguments' }, h('code', { class: 'args-short', text: truncate(shownJSON(key), 96) })),
      h('pre', { class: 'args-full', text: shownJSON(prettyJSON(c.args)) })));
  }

  function drawProgress(c, ui, state) {
    const p = c.progress;
    if (!p) {
      ui.progress.hidden = true;
      return;
    }
    ui.progress.hidden = false;
    const v = progressView(p, !!c.result, state);
    ui.progress.classList.toggle('indeterminate', v.indeterminate);
    ui.progress.classList.toggle('finished', v.finished);
    const w = v.indeterminate ? '' : `${(v.width * 100).toFixed(1)}%`;
    if (ui.bar.style.width !== w) ui.bar.style.width = w;
    setText(ui.pct, v.label);
    let msg = str(p.message);
    if (!msg && p.data !== undefined) msg = truncate(compactJSON(p.data), 120);
    if (c.dropped > 0) msg += ` (${c.dropped} progress update${c.dropped === 1 ? '' : 's'} dropped)`;
    setText(ui.pmsg, msg);
    ui.pmsg.title = msg;
  }

  // progressView is how a call's bar looks: its width (0 to 1, undefined
  // while the progress is unknown) and its label. A call that succeeded is
  // done, its bar full, whatever its last report said (a search that
  // stops at its match limit reports 18% last); one that ended otherwise
  // keeps the bar where it stopped.
  function progressView(p, final, state) {
    const frac = num(p.fraction);
    let width;
    let label = frac !== undefined ? `${Math.round(clamp01(frac) * 100)}%` : '';
    if (final && state === 'success') {
      width = 1;
      label = 'done';
    } else if (final) {
      width = frac !== undefined ? clamp01(frac) : 1;
    } else if (frac !== undefined) {
      width = clamp01(frac);
    }
    return { width, label, finished: final, indeterminate: width === undefined };
  }

  function drawResult(c, ui) {
    const pre = ui.result;
    const follow = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
    let changed = false;
    let toTop = false;
    let total = c.streamed;
    if (c.result) {
      if (!c.view) c.view = shownText(c.content || []); // once: a large JSON part costs to render
      const r = c.view;
      total = r.total;
      c.clipped = r.total > r.text.length;
      if (r.text !== c.shown) {
        // A result that replaces what streamed (or that came all at once,
        // as in a replay) is read from its start; one that streamed stays
        // where the reader followed it.
        toTop = true;
        pre.textContent = r.text;
        c.shown = r.text;
        changed = true;
      }
      c.pending = '';
      c.rebuild = false;
    } else if (c.rebuild) {
      c.rebuild = false;
      c.pending = '';
      const r = shownText(contentOfDeltas(c));
      total = c.streamed = r.total;
      c.clipped = r.total > r.text.length;
      if (r.text !== c.shown) {
        pre.textContent = r.text;
        c.shown = r.text;
        changed = true;
      }
    } else if (c.pending) {
      pre.append(c.pending);
      c.shown += c.pending;
      c.pending = '';
      changed = true;
    }
    pre.classList.toggle('error-text', !!c.result && c.result.state !== 'success');
    if (changed && toTop) pre.scrollTop = 0;
    else if (changed && follow) pre.scrollTop = pre.scrollHeight;
    ui.clip.hidden = !c.clipped;
    if (c.clipped) {
      const size = c.result && c.result.content_omitted === true ? num(c.result.content_size) : undefined;
      setText(ui.clip, `Showing the first ${c.shown.length.toLocaleString()} of ${total.toLocaleString()} characters` +
        (size !== undefined ? ` (${fmtBytes(size)} rebuilt from the deltas)` : '') + '; the page keeps the whole result.');
    }
  }

  function fmtBytes(n) {
    if (n < 1024) return `${n} bytes`;
    if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
    return `${(n / 1048576).toFixed(1)} MiB`;
  }

  function drawMeta(c, ui) {
    const meta = c.result && isObj(c.result.meta) ? c.result.meta : null;
    const key = meta ? compactJSON(meta) : '';
    if (ui.metaKey === key) return;
    ui.metaKey = key;
    ui.meta.replaceChildren();
    ui.meta.hidden = !meta || Object.keys(meta).length === 0;
    if (!meta) return;
    for (const [k, v] of Object.entries(meta)) {
      const val = typeof v === 'string' ? v : compactJSON(v);
      ui.meta.append(h('span', { class: 'meta-item', title: `${k}: ${val}` },
        h('span', { class: 'meta-k', text: k }), h('span', { class: 'meta-v', text: truncate(val, 80) })));
    }
  }

  // ------------------------------------------------------------ approvals

  function drawApproval(S, c, ui) {
    const a = c.approval;
    if (!a) {
      if (ui.approval) { ui.approval.remove(); ui.approval = null; ui.approvalKey = ''; }
      return;
    }
    const pending = a.status === 'pending' && !c.result;
    const key = pending
      ? `pending|${compactJSON(a.args)}|${str(a.expires)}`
      : `decided|${a.status}|${str(a.note)}|${c.result ? str(c.result.state) : ''}`;
    if (ui.approvalKey === key) return;
    // A new pending request for the same call keeps what the person typed.
    const keep = pending && ui.approvalForm && ui.approvalKey.startsWith('pending|') ? ui.approvalForm : null;
    const box = pending ? pendingBox(S, c, a, keep) : decidedBox(c, a);
    if (ui.approval) ui.approval.replaceWith(box);
    else ui.card.insertBefore(box, ui.result);
    ui.approval = box;
    ui.approvalKey = key;
  }

  function pendingBox(S, c, a, keep) {
    const tool = str(a.tool) || c.tool;
    const initial = a.args === undefined ? '{}' : shownJSON(JSON.stringify(a.args, null, 2));
    const ta = h('textarea', { class: 'approval-args', spellcheck: 'false', rows: String(Math.min(10, initial.split('\n').length + 1)), 'aria-label': `arguments of ${tool}` });
    ta.value = keep && keep.ta.value !== keep.initial ? keep.ta.value : initial;
    const reason = h('input', { class: 'reject-reason', type: 'text', placeholder: 'reason for rejecting (optional)', 'aria-label': 'reason for rejecting' });
    if (keep) reason.value = keep.reason.value;
    const always = h('input', { class: 'always', type: 'checkbox' });
    if (keep) always.checked = keep.always.checked;
    const err = h('p', { class: 'approval-error', role: 'alert' });
    const sent = h('p', { class: 'approval-sent' });
    const approve = h('button', { class: 'approve', type: 'button', text: 'Approve' });
    const reject = h('button', { class: 'reject', type: 'button', text: 'Reject' });
    // Suggested rules: one click approves and adds the rule to the session.
    const offered = (Array.isArray(a.suggestions) ? a.suggestions : []).filter((x) => isObj(x) && str(x.id) && str(x.label));
    // A suggestion for the whole tool does what the checkbox does: one of them is enough.
    const wholeTool = offered.some((x) => isObj(x.grant) && str(x.grant.tool) === tool && !str(x.grant.under) && x.grant.args === undefined);
    const suggestions = offered
      .map((x) => h('button', { class: 'suggestion', type: 'button', 'data-suggestion': str(x.id), title: 'Approve, and add this rule for the rest of the session', text: str(x.label) }));
    const form = { ta, initial, reason, always, err, sent, approve, reject, suggestions };
    c.ui.approvalForm = form;

    // editedArgs is the edited arguments, undefined when unchanged, or null
    // (with the error shown) when they are not a JSON object.
    const editedArgs = () => {
      if (ta.value.trim() === initial.trim()) return undefined;
      let args;
      try {
        args = JSON.parse(ta.value);
      } catch (e) {
        err.textContent = `The arguments are not valid JSON: ${e && e.message ? e.message : e}`;
        return null;
      }
      if (!isObj(args)) {
        err.textContent = 'The arguments must be a JSON object.';
        return null;
      }
      return args;
    };
    approve.addEventListener('click', () => {
      err.textContent = '';
      const args = editedArgs();
      if (args === null) return;
      decide(S, c, a, form, { approve: true, args, always: always.checked });
    });
    for (const b of suggestions) {
      b.addEventListener('click', () => {
        err.textContent = '';
        const args = editedArgs();
        if (args === null) return;
        decide(S, c, a, form, { approve: true, args, always: always.checked, suggestion: b.dataset.suggestion });
      });
    }
    reject.addEventListener('click', () => {
      err.textContent = '';
      decide(S, c, a, form, { approve: false, reason: reason.value.trim() });
    });

    const expires = fmtClock(a.expires);
    return h('div', { class: 'approval pending', 'data-status': 'pending' },
      h('div', { class: 'approval-head' },
        h('span', { class: 'approval-icon', 'aria-hidden': 'true', text: '!' }),
        h('span', { class: 'approval-title' }, 'Approval needed: ', h('code', { text: tool })),
        expires ? h('span', { class: 'approval-expires', text: `waits until ${expires}` }) : null),
      str(a.reason) ? h('p', { class: 'approval-reason', text: str(a.reason) }) : null,
      h('label', { class: 'approval-label' }, 'Arguments (edit before approving if you like)', ta),
      h('div', { class: 'approval-row' },
        approve,
        wholeTool ? null : h('label', { class: 'approval-check' }, always, ` always allow ${tool} in this session`)),
      suggestions.length ? h('div', { class: 'approval-suggestions', role: 'group', 'aria-label': 'approve with a rule' },
        h('span', { class: 'approval-suggestions-title', text: 'Or approve and allow:' }), ...suggestions) : null,
      h('div', { class: 'approval-row' }, reason, reject),
      err, sent);
  }

  async function decide(S, c, a, form, d) {
    const buttons = [form.approve, form.reject, ...form.suggestions];
    for (const b of buttons) b.disabled = true;
    form.sent.textContent = 'Sending…';
    const body = { session: str(a.session) || S.session, call: c.id, approve: d.approve, always: !!d.always };
    if (d.approve && d.suggestion) body.suggestion = d.suggestion;
    if (d.approve && d.args !== undefined) body.args = d.args;
    if (!d.approve) body.reason = d.reason || '';
    try {
      const r = await fetch('/api/approve', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      let j = null;
      try { j = await r.json(); } catch { /* not JSON */ }
      if (!r.ok || (isObj(j) && str(j.error))) {
        throw new Error((isObj(j) && str(j.error)) || `the server answered ${r.status} ${r.statusText}`);
      }
      form.sent.textContent = d.approve
        ? 'Approved. Waiting for the call to go on…'
        : 'Rejected. Waiting for the call to end…';
    } catch (e) {
      form.sent.textContent = '';
      form.err.textContent = e && e.message ? e.message : String(e);
      for (const b of buttons) b.disabled = false;
    }
  }

  function decidedBox(c, a) {
    let status = str(a.status) || 'pending';
    let note = str(a.note);
    if (status === 'pending' && c.result) {
      status = 'closed';
      note = `the call ended (${str(c.result.state) || 'error'}) before a decision`;
    }
    const words = { approved: 'Approved', rejected: 'Rejected', expired: 'Expired', denied: 'Denied by a rule', closed: 'No longer waiting' };
    return h('div', { class: `approval decided ${status}`, 'data-status': status },
      h('div', { class: 'approval-head' },
        h('span', { class: 'approval-icon', 'aria-hidden': 'true', text: status === 'approved' ? '✓' : '×' }),
        h('span', { class: 'approval-title', text: `${words[status] || status}${note ? ': ' + note : ''}` })),
      str(a.reason) ? h('p', { class: 'approval-reason', text: `Asked because ${str(a.reason)}.` }) : null);
  }

  // ----------------------------------------------------------- side panel

  function drawSide(S) {
    // tool groups
    const groups = S.groups ? strList(S.groups.active) : [];
    const gl = byId('groups');
    const gkey = groups.join('\u0000');
    if (gl.dataset.key !== gkey) {
      gl.dataset.key = gkey;
      const activated = S.groups ? strList(S.groups.activated) : [];
      gl.replaceChildren(...groups.map((g) => h('li', { class: activated.includes(g) ? 'chip new' : 'chip', 'data-group': g, text: g })));
    }
    byId('groups-empty').hidden = groups.length > 0;
    let change = '';
    if (S.groups) {
      const g = S.groups;
      const parts = [];
      if (strList(g.activated).length) parts.push(`${strList(g.activated).join(', ')} switched on`);
      if (strList(g.deactivated).length) parts.push(`${strList(g.deactivated).join(', ')} switched off`);
      const by = { model: 'the model (reset_tools)', code: 'code', skill: 'loading a skill' }[str(g.by)] || str(g.by);
      change = `Last change: ${parts.join(', ') || 'groups set'}${by ? ' by ' + by : ''}${str(g.call) ? ` in ${str(g.call)}` : ''}.`;
    }
    setText(byId('groups-change'), change);

    // skills
    const sl = byId('skills');
    const names = [...new Set([...S.skillsLoaded, ...S.skills.keys()])];
    const skey = names.map((n) => n + compactJSON(S.skills.get(n) || null)).join('\u0000');
    if (sl.dataset.key !== skey) {
      sl.dataset.key = skey;
      sl.replaceChildren(...names.map((n) => {
        const s = S.skills.get(n);
        const bits = [];
        if (s && s.path) bits.push(s.path);
        if (s && s.groups.length) bits.push(`switched on ${s.groups.join(', ')}`);
        return h('li', { 'data-skill': n },
          h('span', { class: 'skill-name', text: n }),
          bits.length ? h('span', { class: 'skill-detail', text: bits.join(' · ') }) : null);
      }));
    }
    byId('skills-empty').hidden = names.length > 0;

    // approvals
    const pending = [...S.calls.values()].filter((c) => c.approval && c.approval.status === 'pending' && !c.result);
    const count = byId('pending-count');
    setText(count, String(pending.length));
    count.dataset.count = String(pending.length);
    const al = byId('approvals');
    const akey = pending.map((c) => c.id).join('\u0000');
    if (al.dataset.key !== akey) {
      al.dataset.key = akey;
      al.replaceChildren(...pending.map((c) => h('li', null,
        h('button', {
          type: 'button', class: 'link', 'data-call': c.id,
          onclick: () => {
            if (!c.ui) return;
            c.ui.card.scrollIntoView({ behavior: 'smooth', block: 'center' });
            const ta = c.ui.card.querySelector('textarea');
            if (ta) ta.focus({ preventScroll: true });
          },
        }, h('code', { text: c.tool || '?' }), ` ${c.id}`))));
    }
    byId('approvals-empty').hidden = pending.length > 0;

    // calls by state
    const counts = new Map();
    for (const c of S.calls.values()) {
      const s = callState(c);
      counts.set(s, (counts.get(s) || 0) + 1);
    }
    const states = [...counts.keys()].sort((x, y) => {
      const ix = STATE_ORDER.indexOf(x), iy = STATE_ORDER.indexOf(y);
      return (ix < 0 ? 99 : ix) - (iy < 0 ? 99 : iy);
    });
    const stats = byId('stats');
    const ckey = states.map((s) => s + counts.get(s)).join(',');
    if (stats.dataset.key !== ckey) {
      stats.dataset.key = ckey;
      stats.replaceChildren(...states.map((s) => h('li', { 'data-state': s },
        h('span', { class: 'dot', 'data-state': s }), h('span', { class: 'stat-k', text: s }), h('span', { class: 'stat-v', text: String(counts.get(s)) }))));
    }
    byId('stats-empty').hidden = S.calls.size > 0;

    // stream
    setText(byId('event-count'), String(S.events));
    setText(byId('last-id'), S.lastId ? String(S.lastId) : '–');

    // final answer, inside the turn that gave it when there is one
    const box = byId('final-box');
    let host = null;
    if (S.done) {
      const text = str(S.done.text).trim();
      for (const t of S.turns.values()) {
        if (t.el && t.callIds.length === 0 && t.text.trim() === text && (!host || t.n > host.n)) host = t;
      }
      for (const t of S.turns.values()) {
        if (t.ui) t.ui.say.hidden = !t.text || t === host;
      }
      const parent = host ? host.el : byId('main');
      if (box.parentElement !== parent) parent.append(box);
      box.hidden = false;
      setText(byId('final'), text || '(the model ended without a final text)');
      const bits = [];
      const calls = num(S.done.calls);
      const turns = num(S.done.turns);
      if (calls !== undefined) bits.push(`${calls} call${calls === 1 ? '' : 's'}`);
      if (turns !== undefined) bits.push(`${turns} turn${turns === 1 ? '' : 's'}`);
      const states = new Map();
      for (const c of S.calls.values()) {
        const st = callState(c);
        states.set(st, (states.get(st) || 0) + 1);
      }
      if (states.size > 1 || !states.has('success')) {
        bits.push([...states].map(([st, k]) => `${k} ${st}`).join(', '));
      }
      setText(byId('final-summary'), bits.join(' · '));
    } else {
      if (box.parentElement !== byId('main')) byId('main').append(box);
      box.hidden = true;
      setText(byId('final'), '');
      setText(byId('final-summary'), '');
    }
  }

  // ---------------------------------------------------- the connection

  function setStatus(kind, text) {
    const s = byId('status');
    s.dataset.status = kind;
    setText(s, text);
  }

  function connect() {
    const S = page.S;
    clearTimeout(page.retryTimer);
    if (page.es) page.es.close();
    let url = '/events?session=' + encodeURIComponent(S.session);
    // A connection made by hand (after the browser gave up) resumes where
    // this page is; the browser's own reconnects send Last-Event-ID.
    if (S.lastId > 0) url += '&lastEventId=' + S.lastId;
    const es = new EventSource(url);
    page.es = es;
    setStatus('connecting', 'connecting…');
    es.addEventListener('open', () => {
      if (page.es === es) setStatus('live', 'live');
    });
    for (const t of EVENT_TYPES) es.addEventListener(t, onMessage);
    es.addEventListener('error', () => {
      if (page.es !== es) return;
      if (es.readyState === EventSource.CLOSED) {
        // The server refused the stream: try again later, by hand.
        setStatus('offline', 'offline, retrying…');
        page.retryTimer = setTimeout(() => { if (page.es === es) connect(); }, 3000);
      } else {
        setStatus('reconnecting', 'reconnecting…');
      }
    });
  }

  function resetView() {
    const box = byId('final-box');
    box.hidden = true;
    byId('main').append(box);
    byId('timeline').replaceChildren();
    byId('other-calls').replaceChildren();
    byId('other').hidden = true;
    for (const id of ['groups', 'skills', 'approvals', 'stats']) {
      const e = byId(id);
      e.replaceChildren();
      delete e.dataset.key;
    }
    window.scrollTo(0, 0);
  }

  function selectSession(id, byPerson) {
    if (!id || id === page.session) return;
    if (byPerson) {
      page.follow = false;
      try {
        const u = new URL(window.location.href);
        u.searchParams.set('session', id);
        window.history.replaceState(null, '', u);
      } catch { /* the URL stays as it is */ }
    }
    page.session = id;
    page.S = newSessionState(id);
    resetView();
    drawHeader();
    connect();
    scheduleRender();
  }

  // ----------------------------------------------------------- /api/info

  function drawHeader() {
    const info = page.info || {};
    setText(byId('model'), str(info.model) || '…');
    const nats = str(info.nats);
    setText(byId('nats'), nats || 'embedded, no listener');
    setText(byId('stream'), str(info.stream) || '…');
    const cli = byId('cli');
    if (nats && page.session) {
      cli.hidden = false;
      setText(byId('cli-cmd'), `nats sub 'toolstream.${page.session}.>' \\\n  --server ${nats}`);
    } else {
      cli.hidden = true;
    }
    const sessions = [...new Set([...strList(info.sessions), ...(page.session ? [page.session] : [])])].sort();
    const picker = byId('session-picker');
    const name = byId('session-name');
    setText(name, page.session || '…');
    if (sessions.length > 1) {
      const key = sessions.join('\u0000');
      if (picker.dataset.key !== key) {
        picker.dataset.key = key;
        picker.replaceChildren(...sessions.map((s) => h('option', { value: s, text: s })));
      }
      picker.value = page.session;
      picker.hidden = false;
      name.hidden = true;
    } else {
      picker.hidden = true;
      name.hidden = false;
    }
  }

  async function loadInfo() {
    try {
      const r = await fetch('/api/info', { cache: 'no-store' });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const j = await r.json();
      if (!isObj(j)) throw new Error('not an object');
      page.info = j;
      const want = str(j.session) || strList(j.sessions)[0] || '';
      if (!page.session || (page.follow && want && want !== page.session)) selectSession(want, false);
      drawHeader();
    } catch (e) {
      if (!page.session) setStatus('offline', 'server unreachable, retrying…');
    }
  }

  function start() {
    byId('session-picker').addEventListener('change', (e) => selectSession(e.target.value, true));
    let fromURL = '';
    try { fromURL = new URL(window.location.href).searchParams.get('session') || ''; } catch { /* none */ }
    if (fromURL) {
      page.follow = false;
      selectSession(fromURL, false);
    }
    loadInfo();
    setInterval(loadInfo, INFO_EVERY_MS);
    window.addEventListener('beforeunload', () => { if (page.es) page.es.close(); });
  }

  // for debugging in the console; the page does not depend on it
  window.toolstream = { page, shownJSON, progressView, contextCutText, newSessionState, handle };

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
