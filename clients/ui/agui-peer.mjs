// The AG-UI side of toolstream's ui/agui tests: @ag-ui/client's HttpAgent
// (whose verifier checks every event's order) runs the test agent through
// the handler at the URL given, and this script checks what the agent's
// messages and interrupts end up as. It prints one line per check and
// exits 1 on the first failure.
import { HttpAgent } from "@ag-ui/client";

const url = process.argv[2];
if (!url) {
  console.error("usage: node agui-peer.mjs <handler url>");
  process.exit(2);
}

function check(ok, what, detail) {
  if (!ok) {
    console.error(`FAIL ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

// run runs the agent and records every event it applied (after the
// verifier: a verifier error makes runAgent throw).
async function run(agent, params) {
  const seen = [];
  await agent.runAgent(params, { onEvent: ({ event }) => { seen.push(event.type); } });
  return seen;
}

const toolText = (agent, id) => agent.messages.find((m) => m.role === "tool" && m.toolCallId === id)?.content;
const assistantText = (agent) => agent.messages.filter((m) => m.role === "assistant" && m.content).map((m) => m.content).join("|");

// A tour: streamed text and arguments, results (one an error, one reset),
// progress as activity, an approval interrupt and its resume.
{
  const agent = new HttpAgent({ url, threadId: "node-tour" });
  agent.addMessage({ id: "u1", role: "user", content: "tour" });
  const seen = await run(agent, { runId: "r1" });
  check(seen[0] === "RUN_STARTED" && seen.at(-1) === "RUN_FINISHED", "tour: the run starts and finishes", seen);
  check(agent.pendingInterrupts.length === 1 && agent.pendingInterrupts[0].toolCallId === "c4_4", "tour: write_note waits as an interrupt", agent.pendingInterrupts);
  check(toolText(agent, "c1_1") === "one two three", "tour: count's result", toolText(agent, "c1_1"));
  check(String(toolText(agent, "c2_1")).includes("the disk is on fire"), "tour: broken's error result", toolText(agent, "c2_1"));
  check(toolText(agent, "c3_4") === "final", "tour: flaky's replaced result", toolText(agent, "c3_4"));
  check(toolText(agent, "c4_4") === undefined, "tour: write_note has no result yet");
  const calls = agent.messages.flatMap((m) => m.toolCalls ?? []);
  check(calls.find((c) => c.id === "c4_4")?.function.arguments === '{"text":"hi"}', "tour: arguments streamed whole", calls);
  const activity = agent.messages.filter((m) => m.role === "activity" && m.activityType === "toolstream_call");
  const count = activity.find((m) => m.content.toolCallId === "c1_1");
  check(count && count.content.state === "success" && count.content.progress?.fraction === 1 && count.content.deltas.map((d) => d.text).join("") === "one two three",
    "tour: count's activity (progress, deltas, state)", count);
  const flaky = activity.find((m) => m.content.toolCallId === "c3_4");
  check(flaky && flaky.content.deltas.map((d) => d.text).join("") === "final", "tour: flaky's activity starts over at the reset", flaky);
  check(seen.includes("STEP_STARTED") && seen.includes("TEXT_MESSAGE_CONTENT") && seen.includes("TOOL_CALL_ARGS"), "tour: steps, text, arguments", seen);

  const interrupt = agent.pendingInterrupts[0];
  const seen2 = await run(agent, { runId: "r2", resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] });
  check(seen2.at(-1) === "RUN_FINISHED" && agent.pendingInterrupts.length === 0, "tour: the resumed run finishes with no interrupt", seen2);
  check(toolText(agent, "c4_4") === "saved: hi", "tour: write_note ran after its approval", toolText(agent, "c4_4"));
  check(assistantText(agent).endsWith("Done."), "tour: the answer", assistantText(agent));
}

// Two approvals in turn: one cancelled (denied), one rejected with a reason.
{
  const agent = new HttpAgent({ url, threadId: "node-note" });
  agent.addMessage({ id: "u1", role: "user", content: "note" });
  await run(agent, { runId: "r1" });
  check(agent.pendingInterrupts.map((i) => i.id).join() === "n1_1", "note: the first call waits", agent.pendingInterrupts);
  await run(agent, { runId: "r2", resume: [{ interruptId: "n1_1", status: "cancelled" }] });
  check(String(toolText(agent, "n1_1")).includes("rejected"), "note: the cancelled call is denied", toolText(agent, "n1_1"));
  check(agent.pendingInterrupts.map((i) => i.id).join() === "n2_1", "note: the second call waits", agent.pendingInterrupts);
  await run(agent, { runId: "r3", resume: [{ interruptId: "n2_1", status: "resolved", payload: { approved: false, reason: "not now" } }] });
  check(String(toolText(agent, "n2_1")).includes("not now"), "note: the rejection's reason reaches the model", toolText(agent, "n2_1"));
  check(assistantText(agent).endsWith("Done."), "note: the answer", assistantText(agent));
}

// Moving on while a call waits: the waiting call is interrupted and the
// new message runs.
{
  const agent = new HttpAgent({ url, threadId: "node-move-on" });
  agent.addMessage({ id: "u1", role: "user", content: "tour" });
  await run(agent, { runId: "r1" });
  check(agent.pendingInterrupts.length === 1, "move on: a call waits");
  agent.addMessage({ id: "u2", role: "user", content: "hi" });
  const seen = await run(agent, { runId: "r2", resume: agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "cancelled" })) });
  check(seen.at(-1) === "RUN_FINISHED" && assistantText(agent).endsWith("Hello."), "move on: the new message is answered", assistantText(agent));
  check(toolText(agent, "c4_4") === undefined && agent.pendingInterrupts.length === 0, "move on: the interrupted call is gone");
}

// Tool groups are the agent's state (STATE_SNAPSHOT, STATE_DELTA as JSON Patch).
{
  const agent = new HttpAgent({ url, threadId: "node-groups" });
  agent.addMessage({ id: "u1", role: "user", content: "groups" });
  await run(agent, { runId: "r1" });
  check(JSON.stringify(agent.state.groups?.active) === '["extras"]', "groups: the state has the active groups", agent.state);
  check(toolText(agent, "x_3") === "extra!", "groups: the group's tool ran", toolText(agent, "x_3"));
}

// A model retry: the verifier accepts the closed first attempt, and a
// CUSTOM event says the words before it are void.
{
  const agent = new HttpAgent({ url, threadId: "node-retry" });
  agent.addMessage({ id: "u1", role: "user", content: "retry" });
  const custom = [];
  await agent.runAgent({ runId: "r1" }, { onCustomEvent: ({ event }) => { custom.push(event.name); } });
  check(custom.includes("toolstream.model_retry"), "retry: the client is told", custom);
  check(agent.messages.at(-1).role === "assistant" && agent.messages.at(-1).content === "Hello.", "retry: the retry's message comes last", agent.messages);
}

// One runId for every run (the client's to choose): each run's words are
// a message of their own.
{
  const agent = new HttpAgent({ url, threadId: "node-runid" });
  agent.addMessage({ id: "u1", role: "user", content: "hi" });
  await run(agent, { runId: "same" });
  agent.addMessage({ id: "u2", role: "user", content: "hi" });
  await run(agent, { runId: "same" });
  const said = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content);
  check(said.length === 2 && said.every((c) => c === "Hello."), "one runId: a message per run", said);
}

// A long history: HttpAgent sends every run the whole conversation, the
// large results toolstream sent included (1.5 MiB each); runs go on past
// 4 MiB of history.
{
  const agent = new HttpAgent({ url, threadId: "node-big" });
  for (let i = 1; i <= 4; i++) {
    agent.addMessage({ id: "u" + i, role: "user", content: "big" });
    const seen = await run(agent, { runId: "r" + i });
    check(seen.at(-1) === "RUN_FINISHED", `long history: run ${i} finishes`, seen.slice(-3));
  }
  check(JSON.stringify(agent.messages).length > 6 << 20, "long history: the client holds more than 6 MiB", JSON.stringify(agent.messages).length);
}

console.log("agui peer: all checks passed");
