// The official TypeScript MCP SDK (@modelcontextprotocol/sdk, pinned in
// package-lock.json) as an MCP host's client: spawning `mailroom mcp` over
// stdio against a real daemon, and over streamable HTTP against the
// daemon's own /mcp. Each way it lists the tools (its client checks every
// tool's schemas as it reads the list, and refuses the whole list if one
// is malformed), sends a task as one agent, leases it and posts its result
// as another, and drains the result as the first. Run by
// cmd/mailroom/mcp_node_test.go, which sets:
//   MAILROOM_MCP_BIN      the binary to run as `mailroom`
//   MAILROOM_URL          the daemon under test, http://host:port or
//                         https://host:port (it serves /mcp); over HTTPS
//                         NODE_EXTRA_CA_CERTS and MAILROOM_CA_FILE name
//                         the test's CA, for node and `mailroom mcp`
//   MAILROOM_SENDER, MAILROOM_SENDER_TOKEN, MAILROOM_WORKER, MAILROOM_WORKER_TOKEN
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const env = (name) => {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run these tests with go test ./cmd/mailroom -run TestMCPTypeScriptInterop`);
  }
  return v;
};
const bin = env('MAILROOM_MCP_BIN');
const base = env('MAILROOM_URL');
const sender = env('MAILROOM_SENDER');
const worker = env('MAILROOM_WORKER');

// overStdio launches `mailroom mcp` as a host does, the token (and any
// MAILROOM_CA_FILE) in its environment, and connects the SDK's client to
// it.
async function overStdio(token) {
  const transport = new StdioClientTransport({
    command: bin,
    args: ['mcp', '--addr', base],
    env: { ...process.env, MAILROOM_TOKEN: token },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'mailroom-interop', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

// overHTTP connects the SDK's client to the daemon's /mcp with the token,
// as a remote host configured with it does.
async function overHTTP(token) {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'mailroom-interop', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

for (const [how, open] of [['stdio', overStdio], ['streamable HTTP', overHTTP]]) {
  test(`${how}: list tools, send_task, lease_task, post_result, drain_results`, () => cycle(open));
}

async function cycle(open) {
  const planner = await open(env('MAILROOM_SENDER_TOKEN'));
  const coder = await open(env('MAILROOM_WORKER_TOKEN'));
  try {
    const { tools } = await planner.listTools();
    const names = tools.map((t) => t.name);
    for (const want of ['send_task', 'drain_results', 'wait_result', 'get_task', 'reply', 'cancel_task', 'lease_task', 'post_result', 'ask_input', 'list_agents', 'find_agents_by_skill']) {
      assert.ok(names.includes(want), `tools ${names} lack ${want}`);
    }
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', `${t.name}'s input schema`);
      assert.equal(t.outputSchema?.type, 'object', `${t.name}'s output schema`);
      assert.ok(t.description, `${t.name} has no description`);
    }
    assert.ok(!names.includes('requeue'), 'a token that may not repair is offered requeue');
    assert.equal(tools.find((t) => t.name === 'get_task').annotations?.readOnlyHint, true);
    assert.equal(tools.find((t) => t.name === 'cancel_task').annotations?.destructiveHint, true);

    const sent = await planner.callTool({ name: 'send_task', arguments: { to: worker, intent: 'fix the flaky test', context: { repo: 'mailroom', pr: 42 } } });
    assert.ok(!sent.isError, JSON.stringify(sent));
    const taskId = sent.structuredContent.task_id;
    assert.match(taskId, /^[0-9a-f-]{36}$/);

    const leased = await coder.callTool({ name: 'lease_task', arguments: { wait_seconds: 5 } });
    assert.ok(!leased.isError, JSON.stringify(leased));
    const [task] = leased.structuredContent.tasks;
    assert.equal(task.task_id, taskId);
    assert.equal(task.sender, sender);
    assert.equal(task.intent, 'fix the flaky test');
    assert.deepEqual(JSON.parse(task.context_json), { repo: 'mailroom', pr: 42 });

    const posted = await coder.callTool({ name: 'post_result', arguments: { task_id: taskId, lease_id: task.lease_id, status: 'ok', text: 'fixed in abc123' } });
    assert.ok(!posted.isError, JSON.stringify(posted));

    const drained = await planner.callTool({ name: 'drain_results', arguments: { wait_seconds: 5 } });
    assert.ok(!drained.isError, JSON.stringify(drained));
    assert.equal(drained.structuredContent.results.length, 1);
    assert.equal(drained.structuredContent.results[0].task_id, taskId);
    assert.equal(drained.structuredContent.results[0].status, 'ok');
    assert.equal(drained.structuredContent.results[0].text, 'fixed in abc123');

    // A refusal is a tool result with isError, naming what was missing.
    const refused = await coder.callTool({ name: 'send_task', arguments: { to: sender, intent: 'not mine to send' } });
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text, /a2a\.send\./);
  } finally {
    await planner.close();
    await coder.close();
  }
}
