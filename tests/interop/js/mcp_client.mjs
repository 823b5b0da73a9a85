// Drive our MCP endpoint with the official MCP TypeScript SDK (@modelcontextprotocol/sdk,
// pinned in package-lock.json). It speaks 2025-11-25 (initialize, sessions) and older, not
// 2026-07-28. `node mcp_client.mjs ENDPOINT SCENARIO [--token T] [--other T] [--text X]
// [--state FILE]` prints one JSON line of what the SDK observed
// (tests/interop/test_mcp_interop.py checks it).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";

const TOOL = "echo"; // the site's default agent's one skill
const [endpoint, first, ...rest] = process.argv.slice(2);
let scenario = first; // a suite's steps set it in turn
const { values: opts } = parseArgs({
  args: rest,
  options: {
    token: { type: "string", default: "" },
    other: { type: "string", default: "" },
    text: { type: "string", default: "" },
    state: { type: "string", default: "" },
  },
});
let negotiated = null; // the version initialize agreed on (the transport's MCP-Protocol-Version)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connect(token, { elicit } = {}) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers } });
  const capabilities = elicit ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: "interop", version: "1.0.0" }, { capabilities });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  await client.connect(transport);
  negotiated = transport.protocolVersion;
  return client;
}

const textOf = (result) => result.content.filter((c) => c.type === "text").map((c) => c.text);
const observed = (result) => ({
  isError: Boolean(result.isError),
  text: textOf(result),
  structured: result.structuredContent ?? null,
  taskId: result._meta?.["a2a/taskId"] ?? null,
});
const errorOf = (err) => (err instanceof McpError ? { code: err.code, message: err.message } : { code: null, message: String(err) });

async function attempt(promise) {
  try {
    return await promise;
  } catch (err) {
    return { error: errorOf(err) };
  }
}

function answering(approve, seen, gate, opened = () => {}) {
  return async (request) => {
    const related = request.params._meta?.["io.modelcontextprotocol/related-task"] ?? {};
    seen.push({ message: request.params.message, schema: request.params.requestedSchema, taskId: related.taskId ?? null });
    if (gate) {
      writeFileSync(`${gate}.asked`, "asked"); // the test restarts the server, then opens the gate
      while (!existsSync(gate)) await sleep(50);
      opened(); // the new process listens
    }
    return { action: "accept", content: { approved: approve } };
  };
}

const call = (client, text, options) => client.callTool({ name: TOOL, arguments: { message: text } }, CallToolResultSchema, options);

async function taskCall(client, text) {
  const params = { name: TOOL, arguments: { message: text }, task: { ttl: 60000 } };
  return client.request({ method: "tools/call", params }, CreateTaskResultSchema);
}

const scenarios = {
  async connect() {
    const client = await connect(opts.token);
    const tools = (await client.listTools()).tools;
    const again = (await client.listTools()).tools;
    await client.close();
    return { tools, deterministic: JSON.stringify(tools.map((t) => t.name)) === JSON.stringify(again.map((t) => t.name)) };
  },
  async complete() {
    const client = await connect(opts.token);
    return observed(await call(client, opts.text));
  },
  async fail() {
    return scenarios.complete();
  },
  async progress() {
    const client = await connect(opts.token);
    const progress = [];
    const result = await call(client, opts.text, { onprogress: (p) => progress.push({ progress: p.progress, message: p.message ?? null }) });
    return { progress, ...observed(result) };
  },
  async approve() {
    const asked = [];
    const client = await connect(opts.token, { elicit: answering(scenario === "approve", asked) });
    return { asked, ...observed(await call(client, "approve:deploy")) };
  },
  async deny() {
    return scenarios.approve();
  },
  async "restart-legacy"() {
    const asked = [];
    let opened;
    const gateOpened = new Promise((resolve) => (opened = resolve));
    const client = await connect(opts.token, { elicit: answering(true, asked, opts.state, opened) });
    let callError = null; // the call's stream died with the old process: the SDK says so its way
    const pending = call(client, "approve:deploy", { timeout: 120000 }).catch((err) => (callError = errorOf(err)));
    await Promise.race([pending, gateOpened]);
    // The session (signed: the new process knows it) follows the task the question named
    // until the answer, sent to the new process, has continued it.
    const statuses = [];
    for (const deadline = Date.now() + 120000; Date.now() < deadline; await sleep(100)) {
      const got = await attempt(client.experimental.tasks.getTask(asked[0]?.taskId ?? ""));
      statuses.push(got.status ?? "unreachable");
      if (["completed", "failed", "cancelled"].includes(got.status)) break;
    }
    return { asked, callError, statuses };
  },
  async "task-poll"() {
    const client = await connect(opts.token);
    const handle = await taskCall(client, opts.text);
    const taskId = handle.task.taskId;
    const cancelled = scenario === "task-cancel" ? await attempt(client.experimental.tasks.cancelTask(taskId)) : null;
    const statuses = [];
    for (const deadline = Date.now() + 30000; Date.now() < deadline; await sleep(100)) {
      const task = await client.experimental.tasks.getTask(taskId);
      statuses.push(task.status);
      if (["completed", "failed", "cancelled"].includes(task.status)) break;
    }
    let final = null;
    if (statuses.at(-1) === "completed") final = observed(await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema));
    return { taskId, cancelled, statuses, final };
  },
  async "task-cancel"() {
    return scenarios["task-poll"]();
  },
  async isolation() {
    const owner = await connect(opts.token);
    const taskId = (await taskCall(owner, "sleep:20")).task.taskId;
    const other = await connect(opts.other);
    const get = await attempt(other.experimental.tasks.getTask(taskId));
    const cancel = await attempt(other.experimental.tasks.cancelTask(taskId));
    const ownerStatus = (await owner.experimental.tasks.getTask(taskId)).status;
    await attempt(owner.experimental.tasks.cancelTask(taskId));
    return { taskId, get, cancel, ownerStatus };
  },
  // Several scenarios in one process (--state: a JSON list of {name, scenario, text?, other?}),
  // one after another (they share the options): what each observed, by name.
  async suite() {
    const runs = {};
    const base = { ...opts };
    for (const step of JSON.parse(readFileSync(opts.state, "utf8"))) {
      scenario = step.scenario;
      Object.assign(opts, base, step);
      try {
        runs[step.name] = await scenarios[step.scenario]();
      } catch (err) {
        runs[step.name] = { crashed: String(err) };
      }
    }
    return { runs };
  },
  async bad() {
    const client = await connect(opts.token);
    const unknownTool = await attempt(client.callTool({ name: "no-such-tool", arguments: { message: "hi" } }));
    const wrongArguments = await attempt(client.callTool({ name: TOOL, arguments: { text: "hi" } }));
    return { unknownTool, wrongArguments };
  },
};

const sdkPackage = new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url);
const sdkVersion = JSON.parse(readFileSync(sdkPackage)).version;
const found = await scenarios[scenario]();
console.log(JSON.stringify({ scenario: first, sdk: { version: sdkVersion }, protocolVersion: negotiated, ...found }));
process.exit(0);
