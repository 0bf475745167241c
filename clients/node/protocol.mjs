// The toolstream event protocol (version 1) as docs/events.md describes it:
// the token rule for subjects, how a call's content is rebuilt from its
// delta events, and the rules every call's events keep. Written from the
// doc alone; no toolstream code is used.

import { isDeepStrictEqual } from 'node:util';

export const VERSION = 1;
export const LIFECYCLE = ['start', 'progress', 'delta', 'suspend', 'result'];

const PLAIN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

// encodeToken turns a session or call id into a subject token: the id as it
// is when it is plain, else "~" and the unpadded base64url of its UTF-8 bytes.
export function encodeToken(id) {
  if (PLAIN.test(id)) return id;
  return '~' + Buffer.from(id, 'utf8').toString('base64url');
}

// sessionSubject is the wildcard subject of everything of one session.
export function sessionSubject(prefix, session) {
  return `${prefix}.${encodeToken(session)}.>`;
}

// partSize is a part's size as a result that omits its content counts it:
// UTF-8 bytes of text, bytes of the JSON text of JSON parts, decoded bytes of
// binary data. JSON parts are re-serialized by JavaScript, which may write
// them shorter than the publisher did (it escapes <, > and &): exact is
// false then.
export function partSize(p) {
  switch (p.type) {
    case 'text': return { bytes: Buffer.byteLength(p.text, 'utf8'), exact: true };
    case 'binary': return { bytes: Buffer.from(p.data || '', 'base64').length, exact: true };
    case 'json': return { bytes: Buffer.byteLength(JSON.stringify(p.json), 'utf8'), exact: false };
    default: return { bytes: 0, exact: false };
  }
}

function isEmpty(p) {
  switch (p.type) {
    case 'text': return p.text === '';
    case 'json': return p.json === undefined;
    case 'binary': return !p.data;
    default: return true;
  }
}

// addPart is the rule by which deltas add up: empty parts add nothing,
// adjacent text parts join, other parts are appended.
export function addPart(content, part) {
  if (isEmpty(part)) return;
  const last = content[content.length - 1];
  if (part.type === 'text' && last && last.type === 'text') {
    last.pieces.push(part.text);
    return;
  }
  content.push(part.type === 'text' ? { type: 'text', pieces: [part.text] } : part);
}

// finish turns the content being built into plain parts (text joined once,
// so that many small deltas cost linear time).
function finish(content) {
  return content.map((p) => (p.type === 'text' && p.pieces ? { type: 'text', text: p.pieces.join('') } : p));
}

// Rebuilder rebuilds one call's content from its delta events, given in seq
// order: a reset starts over, a run of chunks becomes the part whose JSON
// text their data makes up.
export class Rebuilder {
  constructor() {
    this.content = [];
    this.chunk = null; // { count, next, data: [] }
    this.problems = [];
  }

  add(ev) {
    if (ev.type !== 'delta') return;
    if (ev.reset === true) {
      this.content = [];
      this.chunk = null;
    }
    const c = ev.chunk;
    if (!c) {
      if (this.chunk) {
        this.problems.push(`seq ${ev.seq}: a delta inside the chunks of a part (${this.chunk.next} of ${this.chunk.count} came)`);
        this.chunk = null;
      }
      addPart(this.content, ev.delta);
      return;
    }
    if (c.index === 0) {
      if (this.chunk) this.problems.push(`seq ${ev.seq}: a new part's chunks before the last part's ended`);
      this.chunk = { count: c.count, next: 0, data: [] };
    }
    if (!this.chunk || c.index !== this.chunk.next || c.count !== this.chunk.count) {
      this.problems.push(`seq ${ev.seq}: chunk ${c.index} of ${c.count} out of place`);
      this.chunk = null;
      return;
    }
    this.chunk.data.push(c.data);
    this.chunk.next++;
    if (this.chunk.next === this.chunk.count) {
      const text = this.chunk.data.join('');
      this.chunk = null;
      let part;
      try {
        part = JSON.parse(text);
      } catch (e) {
        this.problems.push(`seq ${ev.seq}: the chunks do not make a part: ${e.message}`);
        return;
      }
      addPart(this.content, part);
    }
  }

  result() {
    if (this.chunk) this.problems.push(`the chunks of a part stop at ${this.chunk.next} of ${this.chunk.count}`);
    return finish(this.content);
  }
}

// checkCall checks one call's events, in the order they arrived, and returns
// what it found: the rebuilt content, the result, and the problems (empty
// when every rule holds).
export function checkCall(evs) {
  const problems = [];
  const bySeq = [...evs].sort((a, b) => a.seq - b.seq);
  bySeq.forEach((ev, i) => {
    if (ev.seq !== i + 1) problems.push(`seq ${ev.seq} at position ${i + 1}: sequence numbers must run 1, 2, 3... with no gap`);
  });
  for (let i = 1; i < evs.length; i++) {
    if (evs[i].seq <= evs[i - 1].seq) problems.push(`seq ${evs[i].seq} arrived after seq ${evs[i - 1].seq}`);
  }
  const results = bySeq.filter((ev) => ev.type === 'result');
  if (results.length !== 1) problems.push(`${results.length} result events, want exactly one`);
  const last = bySeq[bySeq.length - 1];
  if (!last || last.type !== 'result') problems.push(`the last event is ${last ? last.type : 'missing'}, not the result`);
  const result = results.length ? results[results.length - 1].result : null;
  const starts = bySeq.filter((ev) => ev.type === 'start');
  if (starts.length > 1) problems.push(`${starts.length} start events`);
  if (bySeq[0] && bySeq[0].type !== 'start') {
    // Only a call that never got a slot has no start: one delta and the result.
    const neverStarted = starts.length === 0 && result && ['interrupted', 'timeout'].includes(result.state) &&
      bySeq.every((ev) => ev.type === 'delta' || ev.type === 'result');
    if (!neverStarted) problems.push(`the first event is ${bySeq[0].type}, not start`);
  }
  const rb = new Rebuilder();
  for (const ev of bySeq) rb.add(ev);
  const content = rb.result();
  problems.push(...rb.problems);
  let omitted = false;
  if (result) {
    if (result.content_omitted === true) {
      omitted = true;
      if (result.content !== undefined) problems.push('a result with both content and content_omitted');
      if (content.length !== result.content_parts) problems.push(`the deltas make ${content.length} parts, the result says ${result.content_parts}`);
      let bytes = 0;
      let exact = true;
      for (const p of content) {
        const s = partSize(p);
        bytes += s.bytes;
        exact = exact && s.exact;
      }
      if (exact ? bytes !== result.content_size : bytes > result.content_size * 1.5 || bytes * 1.5 < result.content_size) {
        problems.push(`the deltas make ${bytes} bytes, the result says ${result.content_size}`);
      }
    } else if (!Array.isArray(result.content)) {
      problems.push('a result with neither content nor content_omitted');
    } else if (!isDeepStrictEqual(content, result.content)) {
      problems.push(`the deltas make ${JSON.stringify(content).slice(0, 200)}, the result says ${JSON.stringify(result.content).slice(0, 200)}`);
    }
  }
  // Progress dropped is told by the next progress event, or by the result when none follows.
  const dropped = bySeq.reduce((n, ev) => n + (ev.type === 'progress' && ev.progress.dropped ? ev.progress.dropped : 0), 0) +
    (result && result.dropped ? result.dropped : 0);
  return { content, result, omitted, dropped, problems };
}
