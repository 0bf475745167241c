// Unit tests of the client's reading of docs/events.md, on events written
// by hand the way the doc shows them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import { Rebuilder, checkCall, encodeToken } from '../protocol.mjs';

const schema = JSON.parse(readFileSync(new URL('../../../docs/events.schema.json', import.meta.url), 'utf8'));

const env = (seq, type, body) => ({ v: 1, type, session: 's', call: 'c', tool: 't', seq, time: '2026-01-02T03:04:05.5Z', ...body });
const text = (seq, t, reset) => env(seq, 'delta', { delta: { type: 'text', text: t }, ...(reset ? { reset: true } : {}) });

test('the token rule, with the examples of the doc', () => {
  assert.equal(encodeToken('conv-42'), 'conv-42');
  assert.equal(encodeToken('a.b'), '~YS5i');
  assert.equal(encodeToken('日本'), '~5pel5pys');
  assert.equal(encodeToken(''), '~');
  assert.equal(encodeToken('_x'), '~X3g');
  assert.equal(encodeToken('a.>'), '~YS4-');
});

test('a reset delta starts the content over with its (empty) text', () => {
  const rb = new Rebuilder();
  for (const ev of [text(2, 'attempt 1'), text(3, '', true), text(4, '170 files')]) rb.add(ev);
  assert.deepEqual(rb.result(), [{ type: 'text', text: '170 files' }]);
  assert.deepEqual(rb.problems, []);
});

test('chunks make the part whose JSON text their data is', () => {
  const part = JSON.stringify({ type: 'json', json: { rows: [1, 2, 3], note: 'a "q" <b>' } });
  const cut = [part.slice(0, 10), part.slice(10, 25), part.slice(25)];
  const rb = new Rebuilder();
  rb.add(text(2, 'head '));
  cut.forEach((data, i) => rb.add(env(3 + i, 'delta', { chunk: { index: i, count: 3, data }, ...(i === 0 ? { reset: true } : {}) })));
  rb.add(text(6, 'tail'));
  rb.add(text(7, ' more'));
  assert.deepEqual(rb.result(), [JSON.parse(part), { type: 'text', text: 'tail more' }]);
  assert.deepEqual(rb.problems, []);
});

test('a missing chunk is a problem', () => {
  const rb = new Rebuilder();
  rb.add(env(2, 'delta', { chunk: { index: 0, count: 3, data: '{"type":' } }));
  rb.add(env(3, 'delta', { chunk: { index: 2, count: 3, data: '"x"}' } }));
  rb.result();
  assert.equal(rb.problems.length, 1);
});

test('checkCall: the rules of a call', () => {
  const start = env(1, 'start', { start: { index: 0 } });
  const result = (seq, body) => env(seq, 'result', { result: { state: 'success', duration_ms: 1, ...body } });
  const good = [start, text(2, 'a'), env(3, 'progress', { progress: { fraction: 0.5, dropped: 2 } }), text(4, 'b'),
    result(5, { content: [{ type: 'text', text: 'ab' }], dropped: 3 })];
  for (const ev of good) assert.ok(new Ajv2020({ strict: true, strictRequired: false }).compile(schema)(ev), JSON.stringify(ev));
  const r = checkCall(good);
  assert.deepEqual(r.problems, []);
  assert.equal(r.dropped, 5); // 2 told by the progress event, 3 by the result

  const omitted = [start, text(2, 'héllo '), text(3, 'wörld'), result(4, { content_omitted: true, content_size: 13, content_parts: 1 })];
  assert.deepEqual(checkCall(omitted).problems, []);
  const wrongSize = [start, text(2, 'hello'), result(3, { content_omitted: true, content_size: 6, content_parts: 1 })];
  assert.equal(checkCall(wrongSize).problems.length, 1);

  const gap = [start, text(3, 'a'), result(4, { content: [{ type: 'text', text: 'a' }] })];
  assert.ok(checkCall(gap).problems.some((p) => p.includes('no gap')));
  const twoResults = [start, result(2, { content: [] }), result(3, { content: [] })];
  assert.ok(checkCall(twoResults).problems.length > 0);
  const differs = [start, text(2, 'a'), result(3, { content: [{ type: 'text', text: 'b' }] })];
  assert.equal(checkCall(differs).problems.length, 1);
  const neverStarted = [text(1, 'Error: interrupted'), env(2, 'result', { result: { state: 'interrupted', duration_ms: 0, content: [{ type: 'text', text: 'Error: interrupted' }] } })];
  assert.deepEqual(checkCall(neverStarted).problems, []);
});

test('the schema refuses what the old wire looked like', () => {
  const validate = new Ajv2020({ strict: true, strictRequired: false }).compile(schema);
  assert.equal(validate(env(2, 'delta', { delta: { type: 'text' }, reset: true })), false);
  assert.equal(validate(env(2, 'delta', { delta: { type: 'text', text: '' }, reset: true })), true);
});
