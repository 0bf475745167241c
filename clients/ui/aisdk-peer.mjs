// The AI SDK side of toolstream's ui/aisdk tests: the `ai` package's own
// chat transport (what useChat uses) posts to the handler at the URL
// given and its own reader (readUIMessageStream) builds the UI messages;
// this script checks the tool parts' states and outputs, the approval
// round trip and the resume route. One line per check; exit 1 on the
// first failure.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const base = process.argv[2];
if (!base) {
  console.error("usage: node aisdk-peer.mjs <server url> (the handler at /api/chat, the gate at /open-gate)");
  process.exit(2);
}
const transport = new DefaultChatTransport({ api: base + "/api/chat" });

function check(ok, what, detail) {
  if (!ok) {
    console.error(`FAIL ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail, null, 1)}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

// read reads a stream of chunks into UI messages, keeping each version.
async function read(stream, message) {
  const versions = [];
  for await (const m of readUIMessageStream({ message, stream, terminateOnError: true })) {
    versions.push(structuredClone(m));
  }
  return versions;
}

async function send(chatId, messages, message) {
  const stream = await transport.sendMessages({ chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined });
  return read(stream, message);
}

const part = (msg, id) => msg.parts.find((p) => p.toolCallId === id);
const text = (msg) => msg.parts.filter((p) => p.type === "text").map((p) => p.text).join("|");
const user = (id, t) => ({ id, role: "user", parts: [{ type: "text", text: t }] });

// A tour: a preliminary output, an error, a reset, an approval round trip.
{
  const u = user("u1", "tour");
  const versions = await send("node-tour", [u]);
  const msg = versions.at(-1);
  check(text(msg) === "Let me count.", "tour: the model's words", text(msg));
  const count = part(msg, "c1_1");
  check(count?.type === "dynamic-tool" && count.state === "output-available" && count.output === "one two three" && !count.preliminary, "tour: count's final output", count);
  const prelim = versions.map((v) => part(v, "c1_1")).filter((p) => p?.preliminary);
  check(prelim.length > 0 && prelim[0].output === "one " && prelim[0].state === "output-available", "tour: count's preliminary output", prelim);
  const broken = part(msg, "c2_1");
  check(broken?.state === "output-error" && broken.errorText.includes("the disk is on fire"), "tour: broken's error", broken);
  const flakyOutputs = versions.map((v) => part(v, "c3_4")).filter((p) => p?.state === "output-available").map((p) => p.output);
  check(flakyOutputs.includes("draft") && flakyOutputs.at(-1) === "final" && part(msg, "c3_4").preliminary !== true, "tour: flaky's output starts over at the reset", flakyOutputs);
  const note = part(msg, "c4_4");
  check(note?.state === "approval-requested" && note.approval?.id === "c4_4" && note.input?.text === "hi", "tour: write_note asks for approval", note);

  note.state = "approval-responded";
  note.approval = { ...note.approval, approved: true };
  const afterVersions = await send("node-tour", [u, msg], msg);
  const after = afterVersions.at(-1);
  check(after.id === msg.id, "tour: the answer continues the same message", [after.id, msg.id]);
  const done = part(after, "c4_4");
  check(done?.state === "output-available" && done.output === "saved: hi", "tour: write_note ran after its approval", done);
  // write_note returns its result without streaming it: one final output,
  // as the AI SDK sends a tool's plain return (preliminary outputs are a
  // streaming tool's yields), never the same output first as preliminary.
  const notePrelim = afterVersions.map((v) => part(v, "c4_4")).filter((p) => p?.preliminary);
  check(notePrelim.length === 0, "tour: write_note's plain return is one final output, no preliminary", notePrelim);
  check(text(after).endsWith("Done."), "tour: the answer", text(after));
}

// A denial: the first call is rejected, the second asks next.
{
  const u = user("u1", "note");
  const msg = (await send("node-note", [u])).at(-1);
  const n1 = part(msg, "n1_1");
  check(n1?.state === "approval-requested", "note: the first call waits", n1);
  n1.state = "approval-responded";
  n1.approval = { ...n1.approval, approved: false, reason: "no" };
  const after = (await send("node-note", [u, msg], msg)).at(-1);
  check(part(after, "n1_1")?.state === "output-denied", "note: the rejected call is denied", part(after, "n1_1"));
  check(part(after, "n2_1")?.state === "approval-requested", "note: the second call waits", part(after, "n2_1"));
}

// Two calls of one stage ask: the person answers the one asked first; the
// response that runs it ends paused on the other, and asks for it (its
// own request may have gone to a response the client never read).
{
  const u = user("u1", "two");
  const msg = (await send("node-two", [u])).at(-1);
  const asked = msg.parts.filter((p) => p.type === "dynamic-tool" && p.state === "approval-requested");
  check(asked.length >= 1, "two: a call waits", msg.parts);
  const first = asked[0];
  const other = first.toolCallId === "a1_1" ? "a2_1" : "a1_1";
  first.state = "approval-responded";
  first.approval = { ...first.approval, approved: true };
  for (const p of asked.slice(1)) { p.state = "input-available"; delete p.approval; } // as if never asked
  const after = (await send("node-two", [u, msg], msg)).at(-1);
  check(part(after, first.toolCallId)?.state === "output-available", "two: the answered call ran", part(after, first.toolCallId));
  check(part(after, other)?.state === "approval-requested" && part(after, other).approval?.id === other, "two: the other call is asked for", part(after, other));
}

// A long history: useChat sends the whole conversation with every
// request, the large outputs toolstream sent included (1.5 MiB each);
// requests go on past 4 MiB of history.
{
  const messages = [];
  for (let i = 1; i <= 4; i++) {
    messages.push(user("u" + i, "big"));
    const msg = (await send("node-big", messages)).at(-1);
    check(msg.parts.some((p) => p.type === "dynamic-tool" && p.state === "output-available"), `long history: request ${i} is answered`, msg.parts.map((p) => p.type));
    messages.push(msg);
  }
  check(JSON.stringify(messages).length > 6 << 20, "long history: the chat holds more than 6 MiB", JSON.stringify(messages).length);
}

// Tool groups: a data part the message keeps.
{
  const msg = (await send("node-groups", [user("u1", "groups")])).at(-1);
  const groups = msg.parts.filter((p) => p.type === "data-toolstream-groups");
  check(groups.length === 1 && JSON.stringify(groups[0].data.active) === '["extras"]', "groups: one data part with the active groups", groups);
}

// A model retry: reset-step takes back the failed attempt's words.
{
  const msg = (await send("node-retry", [user("u1", "retry")])).at(-1);
  check(text(msg) === "Hello.", "retry: only the retry's words stay", msg.parts);
}

// Resume: a reload reconnects to the response in progress and gets the
// same message.
{
  check((await transport.reconnectToStream({ chatId: "node-gate" })) === null, "resume: nothing to resume before the chat runs");
  const stream = await transport.sendMessages({ chatId: "node-gate", messages: [user("u1", "gate")], trigger: "submit-message", abortSignal: undefined });
  const [live, rest] = stream.tee();
  const reader = rest.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done || value.type === "tool-input-available") break;
  }
  reader.releaseLock();
  const resumed = await transport.reconnectToStream({ chatId: "node-gate" });
  check(resumed !== null, "resume: the response in progress is there");
  const opened = await fetch(base + "/open-gate", { method: "POST" });
  check(opened.ok, "resume: the gate opens");
  const [a, b] = await Promise.all([read(live), read(resumed)]);
  rest.cancel();
  const la = a.at(-1), lb = b.at(-1);
  check(JSON.stringify(la) === JSON.stringify(lb), "resume: the resumed message is the live one", { live: la, resumed: lb });
  check(part(lb, "g_1")?.output === "opened" && text(lb) === "Waiting.|Done.", "resume: the resumed message is whole", lb);
  check((await transport.reconnectToStream({ chatId: "node-gate" })) === null, "resume: nothing to resume after the end");
}

console.log("aisdk peer: all checks passed");
