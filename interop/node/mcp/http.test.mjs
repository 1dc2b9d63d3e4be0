// The daemon's /mcp as the official TypeScript MCP SDK's client and a
// host's own requests see it: the SDK's default protocol version (a
// session), 2025-11-25 asked for explicitly, what a 401 says and what a
// shared cache may keep. Run by cmd/mailroom/mcp_node_test.go, which sets
// MAILROOM_URL and the tokens (see host.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const env = (name) => {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run these tests with go test ./cmd/mailroom -run TestMCPTypeScriptInterop`);
  }
  return v;
};
const url = `${env('MAILROOM_URL')}/mcp`;
const token = env('MAILROOM_SENDER_TOKEN');

test('streamable HTTP: the SDK connects with its default protocol version', async () => {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'mailroom-interop', version: '1.0.0' });
  await client.connect(transport);
  try {
    assert.equal(transport.protocolVersion, LATEST_PROTOCOL_VERSION);
    assert.ok(transport.sessionId, 'no session');
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'send_task'));
  } finally {
    await client.close();
  }
});

// post sends one JSON-RPC message as a host does (auth null: without an
// Authorization header) and returns the answer and the JSON-RPC messages
// in it (a JSON body or an event stream).
async function post(message, headers = {}, auth = `Bearer ${token}`) {
  const h = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers };
  if (auth) {
    h.Authorization = auth;
  }
  const res = await fetch(url, { method: 'POST', headers: h, body: JSON.stringify(message) });
  const text = await res.text();
  let messages = [];
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    messages = text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
  } else if (text && res.headers.get('content-type')?.startsWith('application/json')) {
    messages = [JSON.parse(text)];
  }
  return { res, text, messages };
}

test('streamable HTTP: a host asking for 2025-11-25 explicitly gets it, in a session of its own', async () => {
  const init = await post({
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-host', version: '1' } },
  });
  assert.equal(init.res.status, 200, init.text);
  assert.equal(init.messages[0].result.protocolVersion, '2025-11-25');
  const session = init.res.headers.get('mcp-session-id');
  assert.ok(session, 'no Mcp-Session-Id');
  // What the token saw is no shared cache's to keep.
  assert.match(init.res.headers.get('cache-control') ?? '', /no-store|private/);
  assert.match(init.res.headers.get('vary') ?? '', /Authorization/);

  const headers = { 'Mcp-Session-Id': session, 'Mcp-Protocol-Version': '2025-11-25' };
  const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  assert.equal(initialized.res.status, 202, initialized.text);
  const list = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers);
  assert.equal(list.res.status, 200, list.text);
  assert.ok(list.messages[0].result.tools.some((t) => t.name === 'send_task'), list.text);

  // A refused subscription is an error with a code a host can act on.
  const sub = await post({ jsonrpc: '2.0', id: 3, method: 'resources/subscribe', params: { uri: 'mailroom://agents/coder@local/card' } }, headers);
  assert.equal(sub.messages[0].error?.code, -32602, sub.text);

  const end = await fetch(url, { method: 'DELETE', headers: { Authorization: `Bearer ${token}`, ...headers } });
  assert.equal(end.status, 204);
});

test('streamable HTTP: a 401 names the Bearer scheme', async () => {
  // null: no Authorization header at all.
  for (const auth of [null, 'Bearer mr_not-a-token']) {
    const { res, text } = await post({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-host', version: '1' } },
    }, {}, auth);
    assert.equal(res.status, 401, text);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="mailroom"/);
  }
});
