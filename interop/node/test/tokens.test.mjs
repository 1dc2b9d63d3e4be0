// @a2a-js/sdk 1.3.0 (the v1.0 wire) against a real daemon with tokens,
// over JSON-RPC and HTTP+JSON: it resolves the public card of a protected
// agent (its bearer scheme declared; the card's exact fields are checked
// in daemon/a2a/card_cache_test.go), then calls with the token: a send, a
// get, a get of an unknown task (TaskNotFoundError), a push config
// deleted twice; without the token a call is refused. Run by
// daemon/a2a/interop_node_tokens_test.go (TestJSSDKCardWithTokens), which
// starts the daemon, registers the agent and sets MAILROOM_A2A_BASE and
// MAILROOM_A2A_TOKEN; without them (as under TestJSSDKInterop, whose
// daemon has no tokens) these tests skip. SDK calls used, checked in
// node_modules/a2a-v1/dist/client/index.d.ts: DefaultAgentCardResolver
// (resolve), ClientFactory (createFromAgentCard),
// ClientFactoryOptions.createFrom, JsonRpcTransportFactory and
// RestTransportFactory with fetchImpl.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory,
} from 'a2a-v1/client';
import { TaskState, Role } from 'a2a-v1';
import { TaskNotFoundError } from 'a2a-v1/errors';

const BASE = process.env.MAILROOM_A2A_BASE;
const TOKEN = process.env.MAILROOM_A2A_TOKEN;
const skip = !(BASE && TOKEN) && 'needs a daemon with tokens: go test ./daemon/a2a -run TestJSSDKCardWithTokens';

// withToken is fetch with the bearer token on every request.
const withToken = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${TOKEN}`);
  return fetch(input, { ...init, headers });
};

function factory(transport, fetchImpl) {
  const opts = fetchImpl ? { fetchImpl } : {};
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory(opts), new RestTransportFactory(opts)],
    preferredTransports: [transport],
    clientConfig: { polling: true },
  }));
}

const send = (text) => ({
  tenant: '',
  message: {
    messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined, extensions: [], referenceTaskIds: [],
  },
  configuration: { acceptedOutputModes: [], historyLength: undefined, returnImmediately: true, taskPushNotificationConfig: undefined },
  metadata: undefined,
});

for (const transport of ['JSONRPC', 'HTTP+JSON']) {
  test(`v1.0 ${transport} with tokens: the card, then calls with the token`, { skip }, async () => {
    const card = await new DefaultAgentCardResolver().resolve(BASE);
    assert.ok(card.securitySchemes?.bearer, 'the card declares the bearer scheme');
    const c = await factory(transport, withToken).createFromAgentCard(card);
    assert.equal(c.protocolVersion, '1.0', 'the client picked a v1.0 interface');

    const sent = await c.sendMessage(send('fix the flaky test'));
    assert.equal(sent.status.state, TaskState.TASK_STATE_SUBMITTED, 'a send with the token queues a task');
    const got = await c.getTask({ tenant: '', id: sent.id });
    assert.equal(got.id, sent.id, 'a get with the token reads it');
    await assert.rejects(c.getTask({ tenant: '', id: randomUUID() }), TaskNotFoundError, 'get of an unknown task');

    await c.createTaskPushNotificationConfig({ tenant: '', id: 'audit', taskId: sent.id, url: 'http://127.0.0.1:9/audit', token: '', authentication: undefined });
    await c.deleteTaskPushNotificationConfig({ tenant: '', taskId: sent.id, id: 'audit' });
    await c.deleteTaskPushNotificationConfig({ tenant: '', taskId: sent.id, id: 'audit' });
    const list = await c.listTaskPushNotificationConfig({ tenant: '', taskId: sent.id, pageSize: 0, pageToken: '' });
    assert.equal(list.configs.length, 0, 'deleted twice, the config is gone');

    const anon = await factory(transport).createFromAgentCard(card);
    await assert.rejects(anon.getTask({ tenant: '', id: sent.id }), 'without the token a call is refused');
  });
}
