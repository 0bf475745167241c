// The official TypeScript SDK's client against toolstream's MCP server over
// streamable HTTP. Driven by mcpbridge's TestServerTypeScriptPeer, which
// starts the server and passes its URL:
//
//   node server-peer.mjs http://127.0.0.1:PORT/mcp
//
// It lists the tools, calls one with a progress token, cancels a long call
// after its first progress, and reads a typed tool's structured content
// (which the SDK checks against the listed outputSchema) and the isError
// result of typed tools that returned no structured value, and answers the
// elicitation a permission "ask" becomes: yes for "noop", no for "weather"
// in Quito (the Go test's rules ask for both), and reads a structured
// result a redaction made break its schema (an isError result). It prints one JSON
// object with what it saw and exits 1 on the first failed check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const url = process.argv[2];
if (!url) {
  console.error("usage: node server-peer.mjs <MCP endpoint URL>");
  process.exit(2);
}

const report = {};
function check(ok, what) {
  if (!ok) {
    report.failed = what;
    console.log(JSON.stringify(report));
    process.exit(1);
  }
}

const client = new Client(
  { name: "toolstream-server-peer", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  elicited.push(req.params.message);
  const yes = req.params.message.includes('"noop"');
  return { action: "accept", content: { approve: yes } };
});
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
report.protocolVersion = transport.protocolVersion;

// tools/list: names, annotations, output schema.
const { tools } = await client.listTools();
report.tools = tools.map((t) => t.name).sort();
const weather = tools.find((t) => t.name === "weather");
check(weather && weather.annotations && weather.annotations.readOnlyHint === true, "weather is read-only");
check(weather.outputSchema && weather.outputSchema.properties && weather.outputSchema.properties.temp_c, "weather has an output schema");
report.weatherAnnotations = weather.annotations;

// A call with a progress token: the SDK sends one when onprogress is set.
const progress = [];
const steps = await client.callTool({ name: "steps", arguments: {} }, undefined, {
  onprogress: (p) => progress.push(p),
});
check(!steps.isError && steps.content[0].type === "text" && steps.content[0].text === "done", "steps answers done");
check(progress.length > 0, "steps reported progress");
for (let i = 1; i < progress.length; i++) {
  check(progress[i].progress > progress[i - 1].progress, "progress increases");
}
report.progress = progress;

// Structured content of a typed tool (validated by the SDK against the schema).
const w = await client.callTool({ name: "weather", arguments: { city: "Lima" } });
check(!w.isError && w.structuredContent && w.structuredContent.city === "Lima", "weather has structured content");
report.structuredContent = w.structuredContent;

// A tool with an output schema that returned no structured value (a typed
// Go tool's nil pointer or nil map): MCP requires structuredContent from it
// unless the result is an error, and this SDK throws on a success without
// one, so the server must send isError with a message.
report.noStructured = {};
for (const name of ["nilptr", "nilmap"]) {
  let r;
  try {
    r = await client.callTool({ name, arguments: {} });
  } catch (e) {
    report.noStructured[name] = "threw: " + String(e && e.message ? e.message : e);
    check(false, `${name}: the client refused the result`);
  }
  check(r.isError === true && r.content.length > 0 && /no structured value/.test(r.content[0].text), `${name} is an isError result`);
  report.noStructured[name] = r.content[0].text;
}

// A structured result an interceptor redacted after the engine checked it
// ("owner" no longer in its enum): the server must not send it as
// structuredContent (this SDK throws: "Structured content does not match
// the tool's output schema"), but as an isError result that says why.
{
  let r;
  try {
    r = await client.callTool({ name: "contact", arguments: { field: "add-owner" } });
  } catch (e) {
    report.redacted = "threw: " + String(e && e.message ? e.message : e);
    check(false, "contact: the client refused the redacted result");
  }
  check(r.isError === true && /does not conform to the tool's output schema/.test(r.content[0].text), "a redacted result that breaks the schema is an isError result");
  check(!JSON.stringify(r).includes("@example.com"), "the redacted secret does not reach the client");
  report.redacted = r.content[0].text;
}

// Invalid arguments: an isError result with "path: message".
const bad = await client.callTool({ name: "weather", arguments: { city: 5 } });
check(bad.isError === true && /city: /.test(bad.content[0].text), "invalid arguments give isError with path: message");
report.invalid = bad.content[0].text;

// A permission "ask": the server elicits, the answer decides.
const approved = await client.callTool({ name: "noop", arguments: {} });
check(!approved.isError && approved.content[0].text === "ok", "an approved call runs");
const rejected = await client.callTool({ name: "weather", arguments: { city: "Quito" } });
check(rejected.isError === true && /rejected/.test(rejected.content[0].text), "a rejected call is an error");
report.elicited = elicited;
report.rejected = rejected.content[0].text;

// Cancel a long call after its first progress: notifications/cancelled.
const ac = new AbortController();
let cancelled = false;
try {
  await client.callTool({ name: "slow", arguments: {} }, undefined, {
    signal: ac.signal,
    onprogress: () => ac.abort("enough"),
  });
} catch (e) {
  cancelled = true;
  report.cancelError = String(e && e.message ? e.message : e);
}
check(cancelled, "the slow call was cancelled");

await transport.terminateSession();
await client.close();
report.ok = true;
console.log(JSON.stringify(report));
