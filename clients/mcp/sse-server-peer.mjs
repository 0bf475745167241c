// An MCP server over the older HTTP+SSE transport (MCP 2024-11-05), made
// with the official TypeScript SDK's SSEServerTransport, for mcpbridge's
// TestClientSSETypeScriptServer (mcpbridge.SSE):
//
//   node sse-server-peer.mjs
//
// It listens on 127.0.0.1 (a free port), prints {"url": ".../sse"} on one
// line of its standard output, and serves until killed: GET /sse opens a
// session's event stream (a new Server each), POST /messages?sessionId=
// carries the client's messages. Tools: echo (read-only), steps (three
// progress notifications, then a result) and big (a text of n bytes).
import http from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const tools = [
  {
    name: "echo",
    description: "Echoes text.",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    annotations: { readOnlyHint: true, title: "Echo" },
  },
  {
    name: "steps",
    description: "Reports progress three times.",
    inputSchema: { type: "object", properties: {} },
  },
  {
    name: "big",
    description: "Returns n bytes of text.",
    inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
  },
];

function newServer() {
  const server = new Server({ name: "ts-sse-peer", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const args = req.params.arguments ?? {};
    switch (req.params.name) {
      case "echo":
        return { content: [{ type: "text", text: `echo: ${args.text}` }] };
      case "steps": {
        const token = req.params._meta?.progressToken;
        if (token === undefined) {
          return { isError: true, content: [{ type: "text", text: "no progress token" }] };
        }
        for (let i = 1; i <= 3; i++) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: 3, message: `step ${i}` },
          });
        }
        return { content: [{ type: "text", text: "done" }] };
      }
      case "big":
        return { content: [{ type: "text", text: "b".repeat(args.n) }] };
    }
    return { isError: true, content: [{ type: "text", text: `no tool ${req.params.name}` }] };
  });
  return server;
}

const transports = new Map();
const httpServer = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://localhost");
  try {
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res);
      transports.set(transport.sessionId, transport);
      res.on("close", () => transports.delete(transport.sessionId));
      await newServer().connect(transport);
      return;
    }
    if (req.method === "POST" && url.pathname === "/messages") {
      const transport = transports.get(url.searchParams.get("sessionId"));
      if (!transport) {
        res.writeHead(404).end("no such session");
        return;
      }
      await transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404).end("not found");
  } catch (err) {
    console.error(err);
    if (!res.headersSent) res.writeHead(500).end(String(err));
  }
});
httpServer.listen(0, "127.0.0.1", () => {
  const { port } = httpServer.address();
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}/sse` }));
});
