// Reads UI message streams saved by a Go test with the `ai` package's own
// reader (readUIMessageStream) and prints the message they make, as one
// JSON line: node aisdk-read.mjs <file>, the file a JSON array of
// streams, each an array of chunks. The first stream starts the message
// (as useChat does on a resume: its transport's resumeStreamIsReplay),
// each next one continues it (as a live request after an approval does).
import { readFileSync } from "node:fs";
import { readUIMessageStream } from "ai";

const streams = JSON.parse(readFileSync(process.argv[2], "utf8"));
let message;
for (const chunks of streams) {
  const stream = new ReadableStream({ start(c) { for (const x of chunks) c.enqueue(x); c.close(); } });
  for await (const m of readUIMessageStream({ message, stream, terminateOnError: true })) {
    message = structuredClone(m);
  }
}
console.log("message " + JSON.stringify(message));
console.log("aisdk read: all checks passed");
