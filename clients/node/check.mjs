// check.mjs follows one toolstream session on NATS, live (core NATS) and by
// replay (the JetStream stream), until the session's "answer" event (the agent loop's last), then
// checks every call against the protocol of docs/events.md:
//
//   - every event validates against docs/events.schema.json (ajv, 2020-12);
//   - per call, seq runs 1, 2, 3... with no gap, in the order of arrival;
//   - start first (unless the call never got a slot), exactly one result, last;
//   - the deltas (resets, text cut in pieces, chunks) add up to the result's
//     content, or to its size and number of parts when it omits the content;
//   - live and replay carry the same events.
//
// Usage: node check.mjs --url nats://127.0.0.1:4222 --session demo
//   [--prefix toolstream] [--stream TOOLSTREAM] [--schema path] [--timeout 300]
//   [--expect-large]   also require large content: a chunked part, a text
//                      delta cut in pieces, a result that omits its content
// Exit status 0 when every check passed, 1 otherwise.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import Ajv2020 from 'ajv/dist/2020.js';
import { VERSION, checkCall, sessionSubject } from './protocol.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: {
    url: { type: 'string', default: 'nats://127.0.0.1:4222' },
    session: { type: 'string', default: 'demo' },
    prefix: { type: 'string', default: 'toolstream' },
    stream: { type: 'string', default: 'TOOLSTREAM' },
    schema: { type: 'string', default: join(here, '..', '..', 'docs', 'events.schema.json') },
    timeout: { type: 'string', default: '300' },
    'expect-large': { type: 'boolean', default: false },
  },
});

let passed = 0;
let failed = 0;
function check(ok, what) {
  if (ok) {
    passed++;
  } else {
    failed++;
    console.log(`FAIL ${what}`);
  }
  return ok;
}

// Strict, but for strictRequired, which would refuse the schema's "not required" idiom.
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
const validate = ajv.compile(JSON.parse(readFileSync(opt.schema, 'utf8')));

// A source collects one session's messages until its "answer" event.
class Source {
  constructor(name) {
    this.name = name;
    this.events = []; // { ev, raw }
    this.invalid = 0;
    this.bytes = 0;
    this.largest = 0;
    this.done = new Promise((resolve) => { this.finish = resolve; });
  }

  take(data) {
    this.bytes += data.length;
    this.largest = Math.max(this.largest, data.length);
    const raw = Buffer.from(data).toString('utf8');
    let ev;
    try {
      ev = JSON.parse(raw);
    } catch (e) {
      check(false, `${this.name}: a message that is not JSON: ${e.message}`);
      return;
    }
    if (ev.v !== VERSION) {
      check(false, `${this.name}: protocol version ${ev.v}: this client reads version ${VERSION}`);
      return;
    }
    if (!validate(ev)) {
      this.invalid++;
      if (this.invalid <= 5) console.log(`${this.name}: invalid event ${raw.slice(0, 200)}: ${ajv.errorsText(validate.errors)}`);
    }
    this.events.push({ ev, raw, size: data.length });
    if (ev.type === 'answer' && !ev.call) this.finish();
  }
}

const nc = await connect({ servers: opt.url, name: 'toolstream-node-client' });
const maxPayload = nc.info.max_payload;
const subject = sessionSubject(opt.prefix, opt.session);
console.log(`connected to ${opt.url} (max payload ${nc.info.max_payload}); following ${subject} live and by replay of ${opt.stream}`);

const live = new Source('live');
const sub = nc.subscribe(subject, { callback: (err, m) => { if (!err) live.take(m.data); } });

const replay = new Source('replay');
const js = jetstream(nc);
const consumer = await js.consumers.get(opt.stream, { filter_subjects: [subject] });
const messages = await consumer.consume();
(async () => {
  for await (const m of messages) replay.take(m.data);
})();

const limit = Number(opt.timeout) * 1000;
let timer;
const timedOut = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), limit); });
const outcome = await Promise.race([Promise.all([live.done, replay.done]), timedOut]);
clearTimeout(timer);
check(outcome !== 'timeout', `the session's "answer" event within ${opt.timeout}s (live ${live.events.length} events, replay ${replay.events.length})`);
sub.unsubscribe();
await messages.close();
await nc.drain();

// checkSource checks the calls of one source and returns them by call id.
function checkSource(src, complete) {
  check(src.invalid === 0, `${src.name}: ${src.invalid} events do not validate against the schema`);
  const calls = new Map();
  const session = [];
  for (const { ev, raw, size } of src.events) {
    if (!ev.call) {
      session.push(ev);
      continue;
    }
    if (!calls.has(ev.call)) calls.set(ev.call, []);
    calls.get(ev.call).push({ ev, raw, size });
  }
  const out = new Map();
  for (const [id, list] of calls) {
    const evs = list.map((x) => x.ev);
    // A live subscriber that came late misses the start of calls already
    // running; those are checked on the replay only.
    if (!complete && !evs.some((ev) => ev.seq === 1)) continue;
    const r = checkCall(evs);
    for (const p of r.problems) check(false, `${src.name} call ${id} (${evs[0].tool || '?'}): ${p}`);
    if (r.problems.length === 0) passed++;
    out.set(id, { list, r });
  }
  // Session-level events: numbered per session, in order.
  for (let i = 1; i < session.length; i++) {
    check(session[i].seq > session[i - 1].seq, `${src.name}: session event seq ${session[i].seq} after ${session[i - 1].seq}`);
  }
  return out;
}

const replayed = checkSource(replay, true);
const followed = checkSource(live, false);
check(replayed.size > 0, 'the replay has calls');
check(followed.size > 0, 'the live subscriber saw calls from their start');

// Live and replay carry the same events.
for (const [id, { list }] of followed) {
  const other = replayed.get(id);
  if (!check(!!other, `call ${id} seen live is in the replay`)) continue;
  const a = list.map((x) => x.raw);
  const b = other.list.map((x) => x.raw);
  check(a.length === b.length && a.every((s, i) => s === b[i]), `call ${id}: live and replay carry the same ${a.length} events`);
}

// What the run showed: large content, resets, drops.
let chunked = 0;
let omitted = 0;
let resets = 0;
let pieces = 0;
let parts = 0;
for (const { list, r } of replayed.values()) {
  if (r.omitted) omitted++;
  parts += r.content.length;
  for (const { ev, size } of list) {
    if (ev.type !== 'delta') continue;
    if (ev.reset === true) resets++;
    if (ev.chunk && ev.chunk.index === 0) chunked++;
    if (ev.delta && ev.delta.type === 'text' && size > 256 << 10) pieces++;
  }
}
console.log(`replay: ${replay.events.length} events (${(replay.bytes / 1048576).toFixed(1)} MiB, largest message ${replay.largest} bytes) of ${replayed.size} calls; ` +
  `${parts} parts rebuilt, ${omitted} results omitting their content, ${chunked} chunked parts, ${pieces} large text pieces, ${resets} resets`);
if (opt['expect-large']) {
  check(omitted > 0, 'a result that omits its content (content_omitted)');
  check(chunked > 0, 'a part sent in chunks');
  check(pieces > 1, 'a long text sent as several text deltas');
  check(resets > 0, 'a reset delta');
}
check(replay.largest <= maxPayload && live.largest <= maxPayload, `no message over the max payload (${maxPayload})`);

console.log(`checks: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
