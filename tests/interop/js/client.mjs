// Drive an A2A server with the official A2A JavaScript SDK (@a2a-js/sdk, pinned in
// package-lock.json) and report what it saw, for tests/interop/test_interop_js.py.
//
//   node client.mjs BASE_URL SCENARIO [--binding JSONRPC|HTTP+JSON] [--protocol 1.0|0.3] [--webhook URL]
//
// The client is made by the SDK's ClientFactory from the card at BASE_URL, with the one
// transport asked for (--protocol 0.3: the SDK's v0.3 compatibility transport, picked
// from the card's v0.3 interface). Every request goes through a fetch that records the
// A2A-Version header the SDK sent. Prints one JSON line (what the client observed);
// exits 1 with the error on stderr when a step fails.

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";

// The SDK's package.json (its exports do not include it): dist/index.js's parent's.
const SDK_ENTRY = import.meta.resolve("@a2a-js/sdk");
const SDK_VERSION = JSON.parse(readFileSync(new URL("../package.json", SDK_ENTRY), "utf8")).version;

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const stateName = (state) => TaskState[state].replace(/^TASK_STATE_/, "").toLowerCase().replace(/_/g, "-");
const roleName = (role) => Role[role];
const partsText = (parts) =>
  (parts ?? []).filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("\n");
const statusText = (status) => (status?.message ? partsText(status.message.parts) : "");

function describe(task) {
  return {
    id: task.id,
    contextId: task.contextId,
    state: stateName(task.status.state),
    artifacts: (task.artifacts ?? []).map((a) => partsText(a.parts)),
    statusText: statusText(task.status),
    historyRoles: (task.history ?? []).map((m) => roleName(m.role)),
  };
}

/** One stream event (a StreamResponse), as the SDK parsed it. */
function event(response) {
  const { $case, value } = response.payload ?? {};
  if ($case === "task") return { kind: "task", ...describe(value) };
  if ($case === "statusUpdate")
    return { kind: "status-update", taskId: value.taskId, state: stateName(value.status.state), text: statusText(value.status) };
  if ($case === "artifactUpdate")
    return {
      kind: "artifact-update",
      taskId: value.taskId,
      artifactId: value.artifact.artifactId,
      text: partsText(value.artifact.parts),
      append: value.append,
      lastChunk: value.lastChunk,
    };
  if ($case === "message") return { kind: "message", text: partsText(value.parts), role: roleName(value.role) };
  throw new Error(`a StreamResponse with no payload: ${JSON.stringify(response)}`);
}

function userMessage(text, { taskId = "", contextId = "" } = {}) {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    taskId,
    contextId,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const request = (message) => ({ tenant: "", message, configuration: undefined, metadata: undefined });

async function errorOf(promise) {
  try {
    await promise;
  } catch (error) {
    return { type: error.constructor.name, name: error.name, message: String(error.message) };
  }
  throw new Error("expected an error");
}

class Session {
  constructor(baseUrl, binding, protocol) {
    this.baseUrl = baseUrl;
    this.binding = binding;
    this.protocol = protocol;
    this.versions = new Set(); // the A2A-Version headers the SDK sent
    this.fetch = (input, init = {}) => {
      const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
      if (headers.has("A2A-Version")) this.versions.add(headers.get("A2A-Version"));
      return fetch(input, init);
    };
  }

  async open() {
    const card = await (await fetch(`${this.baseUrl}/.well-known/agent-card.json`)).json();
    this.cardName = card.name;
    if (this.protocol === "0.3") {
      // What a v0.3-only peer offers: the factory then picks the compatibility transport.
      card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === "0.3");
    }
    const options = { fetchImpl: this.fetch, legacyCompat: { enabled: this.protocol === "0.3" } };
    const transport =
      this.binding === "HTTP+JSON" ? new RestTransportFactory(options) : new JsonRpcTransportFactory(options);
    const factory = (polling) =>
      new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [transport],
          preferredTransports: [this.binding],
          clientConfig: { polling },
        }),
      );
    // v1.0: the card through the SDK's own resolver (createFromUrl); v0.3: the card kept to its v0.3 interfaces.
    const create = (polling) =>
      this.protocol === "0.3" ? factory(polling).createFromAgentCard(card) : factory(polling).createFromUrl(this.baseUrl);
    this.client = await create(false); // blocking sends
    this.polling = await create(true); // returnImmediately sends
    return this;
  }

  async sendTask(text, { client = this.client, ...ids } = {}) {
    const result = await client.sendMessage(request(userMessage(text, ids)));
    check(result.status !== undefined, `SendMessage answered a message, not a task: ${JSON.stringify(result)}`);
    return result;
  }

  get(id, historyLength) {
    return this.client.getTask({ tenant: "", id, historyLength });
  }

  async wait(id, states, timeout = 15000) {
    const deadline = Date.now() + timeout;
    for (;;) {
      const task = await this.get(id);
      if (states.includes(stateName(task.status.state))) return task;
      check(Date.now() < deadline, `task ${id} still ${stateName(task.status.state)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async stream(message) {
    const events = [];
    for await (const response of this.client.sendMessageStream(request(message))) events.push(event(response));
    return events;
  }
}

// --- scenarios -------------------------------------------------------------------------------

const SCENARIOS = {
  async card(s) {
    const card = await s.client.getAgentCard();
    return { name: card.name, streaming: card.capabilities.streaming, interfaces: card.supportedInterfaces.length };
  },

  async "send-blocking"(s) {
    const task = await s.sendTask("progress:thinking;artifact:first");
    return { task: describe(task), fetched: describe(await s.get(task.id, 10)) };
  },

  async stream(s) {
    const events = await s.stream(userMessage("progress:step one;chunk:c1:Hello, ;last:c1:world;progress:done"));
    return { events, final: describe(await s.get(events[0].id)) };
  },

  async list(s) {
    const first = await s.sendTask("one");
    const second = await s.sendTask("two", { contextId: first.contextId });
    const other = await s.sendTask("elsewhere");
    // Every field of the SDK's ListTasksRequest (ts-proto writes an absent enum as "UNRECOGNIZED").
    const list = (fields) =>
      s.client.listTasks({
        tenant: "",
        contextId: first.contextId,
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken: "",
        statusTimestampAfter: undefined,
        ...fields,
      });
    const page = await list({ includeArtifacts: true });
    const small = await list({ pageSize: 1 });
    const rest = await list({ pageSize: 1, pageToken: small.nextPageToken });
    const done = await list({ status: TaskState.TASK_STATE_COMPLETED });
    return {
      sent: [first.id, second.id],
      other: other.id,
      listed: page.tasks.map((t) => t.id),
      artifacts: page.tasks.map((t) => describe(t).artifacts),
      totalSize: page.totalSize,
      pages: [small.tasks.map((t) => t.id), rest.tasks.map((t) => t.id)],
      nextPageToken: Boolean(small.nextPageToken),
      lastPageToken: rest.nextPageToken,
      completed: done.tasks.map((t) => t.id).sort(),
    };
  },

  async cancel(s) {
    const started = Date.now();
    const task = await s.sendTask("sleep:5", { client: s.polling });
    await s.wait(task.id, ["working"], 5000);
    const canceled = await s.client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    return {
      submitted: describe(task),
      canceled: describe(canceled),
      fetched: describe(await s.get(task.id)),
      seconds: (Date.now() - started) / 1000,
    };
  },

  async "multi-turn"(s) {
    const asked = await s.sendTask("ask:Which city?");
    const answered = await s.sendTask("artifact:Paris", { taskId: asked.id, contextId: asked.contextId });
    // And over a stream: ask, then answer on a stream of the same task.
    const first = await s.stream(userMessage("ask:Which country?"));
    const second = await s.stream(userMessage("artifact:France", { taskId: first[0].id, contextId: first[0].contextId }));
    return {
      asked: describe(asked),
      answered: describe(answered),
      final: describe(await s.get(asked.id, 10)),
      streamed: [first, second],
    };
  },

  async subscribe(s) {
    const task = await s.sendTask("sleep:1;progress:woke;artifact:late", { client: s.polling });
    await s.wait(task.id, ["working"], 5000);
    const events = [];
    for await (const response of s.client.resubscribeTask({ tenant: "", id: task.id })) events.push(event(response));
    return { taskId: task.id, events, final: describe(await s.get(task.id)) };
  },

  async push(s) {
    // Two configs on a task waiting for input, got and listed, one deleted; then the
    // task completes: the webhook hears the kept one only.
    check(Boolean(s.webhook), "--webhook is required");
    const task = await s.sendTask("ask:Shall I?");
    const config = (id) => ({ tenant: "", taskId: task.id, id, url: `${s.webhook}/${id}`, token: `tok-${id}`, authentication: undefined });
    const describeConfig = (c) => ({ taskId: c.taskId, id: c.id, url: c.url, token: c.token });
    const created = [
      await s.client.createTaskPushNotificationConfig(config("keep")),
      await s.client.createTaskPushNotificationConfig(config("drop")),
    ];
    const ids = { tenant: "", taskId: task.id };
    const got = await s.client.getTaskPushNotificationConfig({ ...ids, id: "keep" });
    const list = async () =>
      (await s.client.listTaskPushNotificationConfig({ ...ids, pageSize: 0, pageToken: "" })).configs.map((c) => c.id).sort();
    const listed = await list();
    await s.client.deleteTaskPushNotificationConfig({ ...ids, id: "drop" });
    return {
      taskId: task.id,
      created: created.map(describeConfig),
      got: describeConfig(got),
      listed,
      afterDelete: await list(),
      getDeleted: await errorOf(s.client.getTaskPushNotificationConfig({ ...ids, id: "drop" })),
      final: describe(await s.sendTask("artifact:pushed", { taskId: task.id, contextId: task.contextId })),
    };
  },

  async errors(s) {
    const task = await s.sendTask("quick");
    const missing = randomUUID();
    return {
      getUnknown: await errorOf(s.get(missing)),
      cancelUnknown: await errorOf(s.client.cancelTask({ tenant: "", id: missing, metadata: undefined })),
      cancelCompleted: await errorOf(s.client.cancelTask({ tenant: "", id: task.id, metadata: undefined })),
      failed: describe(await s.sendTask("fail:boom")),
    };
  },
};

function parseArgs(argv) {
  const [baseUrl, scenario, ...rest] = argv;
  const options = { binding: "JSONRPC", protocol: "1.0", webhook: "" };
  for (let i = 0; i < rest.length; i += 2) options[rest[i].replace(/^--/, "")] = rest[i + 1];
  check(scenario in SCENARIOS, `unknown scenario ${scenario}; one of ${Object.keys(SCENARIOS).join(", ")}`);
  check(["JSONRPC", "HTTP+JSON"].includes(options.binding), `unknown binding ${options.binding}`);
  check(["1.0", "0.3"].includes(options.protocol), `unknown protocol ${options.protocol}`);
  return { baseUrl, scenario, ...options };
}

try {
  const args = parseArgs(process.argv.slice(2));
  const session = await new Session(args.baseUrl, args.binding, args.protocol).open();
  session.webhook = args.webhook;
  const observed = await SCENARIOS[args.scenario](session);
  const sdk = {
    version: SDK_VERSION,
    module: SDK_ENTRY,
    transport: session.client.transport.constructor.name,
    protocolVersion: session.client.protocolVersion,
    sentVersions: [...session.versions].sort(),
    agent: session.cardName,
  };
  console.log(JSON.stringify({ scenario: args.scenario, sdk, ...observed }));
} catch (error) {
  console.error(error?.stack ?? error);
  process.exit(1);
}
