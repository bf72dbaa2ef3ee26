// A TypeScript-SDK MCP client (the official npm package) that runs one flow_run.
// Usage: node client.mjs TIMEOUT_MS TASK -- COMMAND ARGS...
// It starts the server over stdio, calls flow_run with a request timeout of TIMEOUT_MS that
// every progress notification resets (resetTimeoutOnProgress), and prints one JSON line:
// {"result": <CallToolResult>, "progress": [<progress params>...]} or {"error": "..."}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [timeoutMs, task, dashes, command, ...args] = process.argv.slice(2);
if (dashes !== "--") {
  throw new Error("usage: node client.mjs TIMEOUT_MS TASK -- COMMAND ARGS...");
}
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "flow-ts-test", version: "0" });
const progress = [];
let out;
try {
  await client.connect(transport);
  const result = await client.callTool({ name: "flow_run", arguments: { task } }, undefined, {
    timeout: Number(timeoutMs),
    resetTimeoutOnProgress: true,
    onprogress: (p) => progress.push(p),
  });
  out = { result, progress };
} catch (err) {
  out = { error: String(err), progress };
}
process.stdout.write(JSON.stringify(out) + "\n");
await client.close();
