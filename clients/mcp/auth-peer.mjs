// The official TypeScript SDK's client against a toolstream MCP server that
// wants OAuth bearer tokens (mcpbridge.WithAuthorization). Driven by
// mcpbridge's TestServerAuthorizationTypeScriptPeer:
//
//   node auth-peer.mjs http://127.0.0.1:PORT/mcp
//
// The Go side accepts the token "good" (alice's). This script connects with
// no token and with a wrong one (both must fail with 401 and a challenge),
// finds the protected-resource metadata the way the SDK's OAuth flow does
// (RFC 9728's well-known URL, from the server URL alone) and checks its
// resource, connects with the valid token and calls whoami, and sends a
// request from another Origin (403). It prints one JSON object with what it
// saw and exits 1 on the first failed check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
  selectResourceURL,
} from "@modelcontextprotocol/sdk/client/auth.js";

const url = process.argv[2];
if (!url) {
  console.error("usage: node auth-peer.mjs <MCP endpoint URL>");
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

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "auth-peer", version: "1" } },
});

// A raw POST, to read the status and the challenge.
async function post(headers) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
    body: initialize,
  });
  const params = extractWWWAuthenticateParams(res);
  await res.body?.cancel();
  return { status: res.status, resourceMetadata: params.resourceMetadataUrl?.href, scope: params.scope };
}

// The SDK's client, with or without a token: null when it connected.
async function connectError(token) {
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  const client = new Client({ name: "auth-peer", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit }));
  } catch (e) {
    return { message: String(e && e.message), code: e && e.code };
  }
  await client.close();
  return null;
}

for (const [name, token] of [["none", undefined], ["wrong", "wrong"]]) {
  const raw = await post(token ? { Authorization: `Bearer ${token}` } : {});
  const err = await connectError(token);
  report[name] = { ...raw, clientError: err };
  check(raw.status === 401, `${name}: status 401`);
  check(err !== null, `${name}: the SDK's client must not connect`);
}

// Discovery as the SDK's auth() does it, from the server URL alone.
const prm = await discoverOAuthProtectedResourceMetadata(url);
report.metadata = prm;
const resource = await selectResourceURL(url, {}, prm);
report.resource = resource && resource.href;
check(report.resource === url, "the metadata's resource is the server URL");
check(report.none.resourceMetadata, "the 401 names the metadata");

// The valid token: connect, list, call.
const client = new Client({ name: "auth-peer", version: "1.0.0" });
await client.connect(
  new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer good" } } }),
);
const { tools } = await client.listTools();
report.tools = tools.length;
const res = await client.callTool({ name: "whoami", arguments: {} });
report.whoami = res.content.map((c) => c.text).join("");
await client.close();

// A page on another origin, even with the valid token.
report.otherOrigin = (await post({ Authorization: "Bearer good", Origin: "http://evil.example" })).status;
check(report.otherOrigin === 403, "another origin: 403");

report.ok = true;
console.log(JSON.stringify(report));
