// @a2a-js/sdk 0.3.14 (the v0.3 wire, JSON-RPC) against a real daemon.
// SDK calls used, checked in node_modules/a2a-v03/dist/client/index.d.ts:
// ClientFactory (createFromUrl), ClientFactoryOptions.createFrom, Client
// (sendMessage, sendMessageStream, getTask, cancelTask, resubscribeTask),
// TaskNotFoundError, TaskNotCancelableError, UnsupportedOperationError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions, TaskNotFoundError, TaskNotCancelableError, UnsupportedOperationError } from 'a2a-v03/client';
import { newAgent, lease, answer, work, withTimeout, collect } from './mailroom.mjs';

async function client(base, polling) {
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    clientConfig: { polling },
    preferredTransports: ['JSONRPC'],
  }));
  return factory.createFromUrl(base);
}

const message = (text, messageId = randomUUID()) => ({
  message: { kind: 'message', role: 'user', messageId, parts: [{ kind: 'text', text }] },
});

// answerTo is the caller's answer to task's question: a message with the
// task's id and context.
const answerTo = (task, text) => ({
  message: { kind: 'message', role: 'user', messageId: randomUUID(), taskId: task.id, contextId: task.contextId, parts: [{ kind: 'text', text }] },
});

test('v0.3: the card, a send, the worker, and the completed task', async () => {
  const { agent, base } = await newAgent('js03-send');
  const c = await client(base, true);
  const card = await c.getAgentCard();
  assert.equal(card.name, 'Coder', 'the card names the registered agent');
  assert.deepEqual(card.skills.map((s) => s.id), ['code'], 'the card lists its skills');
  assert.equal(card.capabilities.streaming, true, 'the card offers streaming');

  const sent = await c.sendMessage(message('fix the flaky test'));
  assert.equal(sent.kind, 'task', 'a send answers a task');
  assert.equal(sent.status.state, 'submitted', 'a new task is submitted');
  const held = await lease(agent);
  assert.equal(held.task.id, sent.id, 'the worker leases the A2A task under the same id');
  assert.equal(held.task.intent_text, 'fix the flaky test', 'the message text is the task intent');
  assert.equal((await c.getTask({ id: sent.id })).status.state, 'working', 'a leased task is working');
  assert.equal(await answer(held, 'ok', 'fixed'), 200, 'the worker posts its result');
  const done = await c.getTask({ id: sent.id });
  assert.equal(done.status.state, 'completed', 'a task with an ok result is completed');
  assert.equal(done.artifacts?.[0]?.parts?.[0]?.text, 'fixed', 'the result is the artifact');
});

test('v0.3: a blocking send waits for the worker', async () => {
  const { agent, base } = await newAgent('js03-block');
  const c = await client(base, false);
  const worker = work(agent, 'error', 'the repository is gone');
  const res = await withTimeout(c.sendMessage(message('tag a release')), 10000, 'blocking send');
  await worker;
  assert.equal(res.status.state, 'failed', 'an error result fails the task');
  assert.equal(res.status.message?.parts?.[0]?.text, 'the repository is gone', 'the error is the status message');
});

test('v0.3: a stream shows submitted, working, the artifact and the final completed', async () => {
  const { agent, base } = await newAgent('js03-stream');
  const c = await client(base, false);
  const worker = work(agent, 'ok', 'streamed');
  const events = await collect(c.sendMessageStream(message('stream me')), 'stream');
  await worker;
  assert.equal(events[0]?.kind, 'task', 'the stream starts with the task');
  assert.equal(events[0].status.state, 'submitted', 'as sent');
  assert.ok(events.some((e) => e.kind === 'status-update' && e.status.state === 'working'), 'a working update');
  assert.ok(events.some((e) => e.kind === 'artifact-update' && e.artifact.parts[0].text === 'streamed'), 'the result as an artifact update');
  const last = events.at(-1);
  assert.equal(last.kind, 'status-update', 'the stream ends on a status update');
  assert.equal(last.status.state, 'completed', 'completed');
  assert.equal(last.final, true, 'marked final');
});

test('v0.3: cancel a queued and a leased task; a finished one cannot be', async () => {
  const { agent, base } = await newAgent('js03-cancel');
  const c = await client(base, true);
  const queued = await c.sendMessage(message('never mind'));
  assert.equal((await c.cancelTask({ id: queued.id })).status.state, 'canceled', 'a queued task is canceled');

  const inflight = await c.sendMessage(message('long job'));
  const held = await lease(agent);
  assert.equal((await c.cancelTask({ id: inflight.id })).status.state, 'canceled', 'a leased task is canceled');
  assert.equal(await answer(held, 'ok', 'too late'), 409, "the worker's late result is refused");
  await assert.rejects(c.cancelTask({ id: inflight.id }), TaskNotCancelableError, 'a finished task cannot be canceled');
});

test('v0.3: an unknown task is TaskNotFound', async () => {
  const { base } = await newAgent('js03-missing');
  const c = await client(base, true);
  await assert.rejects(c.getTask({ id: randomUUID() }), TaskNotFoundError, 'get of an unknown task');
});

test('v0.3: resubscribe follows a submitted task to completed', async () => {
  const { agent, base } = await newAgent('js03-resub');
  const c = await client(base, true);
  const sent = await c.sendMessage(message('watch me'));
  const worker = work(agent, 'ok', 'watched');
  const events = await collect(c.resubscribeTask({ id: sent.id }), 'resubscribe');
  await worker;
  const last = events.at(-1);
  assert.equal(last?.status?.state, 'completed', 'the resubscribed stream ends completed');
  assert.equal(last.final, true, 'marked final');
});

test('v0.3: the same messageId twice is the same task', async () => {
  const { base } = await newAgent('js03-retry');
  const c = await client(base, true);
  const id = randomUUID();
  const a = await c.sendMessage(message('only once', id));
  const b = await c.sendMessage(message('only once', id));
  assert.equal(b.id, a.id, 'a retried message is answered with its task');
});

test('v0.3: the worker asks, the caller answers with taskId, the task completes', async () => {
  const { agent, base } = await newAgent('js03-conv');
  const c = await client(base, false);
  let worker = work(agent, 'input_required', 'which database?');
  const asked = await withTimeout(c.sendMessage(message('migrate the schema')), 10000, 'blocking send');
  await worker;
  assert.equal(asked.status.state, 'input-required', 'a blocking send answers at the question');
  assert.equal(asked.status.message?.role, 'agent', 'the question is the agent\'s');
  assert.equal(asked.status.message?.parts?.[0]?.text, 'which database?', 'the question is the status message');

  worker = (async () => {
    const held = await lease(agent);
    assert.deepEqual(held.task.turns.map((t) => [t.role, t.content[0].text]), [['worker', 'which database?'], ['sender', 'use staging']],
      'the next lease carries the question and the answer');
    assert.equal(await answer(held, 'ok', 'migrated on staging'), 200, 'the worker finishes');
  })();
  const done = await withTimeout(c.sendMessage(answerTo(asked, 'use staging')), 10000, 'blocking answer');
  await worker;
  assert.equal(done.id, asked.id, 'the answer continues the task');
  assert.equal(done.status.state, 'completed', 'and the task completes');
  assert.equal(done.artifacts?.[0]?.parts?.[0]?.text, 'migrated on staging', 'with the result');
  assert.deepEqual(done.history.map((m) => [m.role, m.parts[0].text]),
    [['user', 'migrate the schema'], ['agent', 'which database?'], ['user', 'use staging']], 'every turn is in the history, in order');
});

test('v0.3: a stream follows two turns', async () => {
  const { agent, base } = await newAgent('js03-conv-stream');
  const c = await client(base, false);
  let worker = work(agent, 'input_required', 'which database?');
  const first = await collect(c.sendMessageStream(message('migrate the schema')), 'first stream');
  await worker;
  const asked = first.at(-1);
  assert.equal(asked.kind, 'status-update', 'the first stream ends on a status update');
  assert.equal(asked.status.state, 'input-required', 'at the question');
  assert.equal(asked.final, true, 'marked final');
  worker = work(agent, 'ok', 'migrated');
  const second = await collect(c.sendMessageStream(answerTo({ id: asked.taskId, contextId: asked.contextId }, 'use staging')), 'second stream');
  await worker;
  assert.equal(second[0]?.kind, 'task', 'the answer\'s stream starts with the task');
  assert.equal(second[0].id, asked.taskId, 'the same task');
  assert.equal(second[0].status.state, 'submitted', 'queued again');
  const last = second.at(-1);
  assert.equal(last.status.state, 'completed', 'the second turn completes');
  assert.equal(last.final, true, 'marked final');
});

test('v0.3: an answer to a task that is not waiting is UnsupportedOperation', async () => {
  const { base } = await newAgent('js03-conv-refused');
  const c = await client(base, true);
  const queued = await c.sendMessage(message('queued work'));
  await assert.rejects(c.sendMessage(answerTo(queued, 'more')), UnsupportedOperationError, 'an answer to a queued task');
  await assert.rejects(c.sendMessage(answerTo({ id: randomUUID(), contextId: queued.contextId }, 'more')), TaskNotFoundError, 'an answer to an unknown task');
});

test('v0.3: a send with a push config; set, get, list and delete configs', async () => {
  const { agent, base } = await newAgent('js03-push');
  const c = await client(base, true);
  assert.equal((await c.getAgentCard()).capabilities.pushNotifications, true, 'the card offers push notifications');
  const hook = 'http://127.0.0.1:9/hooks/js03';
  const sent = await c.sendMessage({ ...message('notify me'), configuration: { blocking: false, pushNotificationConfig: { url: hook, token: 'tok-send' } } });
  assert.equal(sent.kind, 'task', 'a send with a config answers a task');
  let list = await c.listTaskPushNotificationConfig({ id: sent.id });
  assert.equal(list.length, 1, 'the send set one config');
  assert.equal(list[0].taskId, sent.id);
  assert.equal(list[0].pushNotificationConfig.url, hook);
  assert.equal(list[0].pushNotificationConfig.token, '***', 'a token is set, its value never read back');
  assert.equal(list[0].pushNotificationConfig.id, sent.id, 'a config without an id takes the task id');

  const set = await c.setTaskPushNotificationConfig({ taskId: sent.id, pushNotificationConfig: { id: 'audit', url: 'http://127.0.0.1:9/audit', authentication: { schemes: ['Bearer'], credentials: 's3cret' } } });
  assert.equal(set.pushNotificationConfig.id, 'audit');
  const got = await c.getTaskPushNotificationConfig({ id: sent.id, pushNotificationConfigId: 'audit' });
  assert.equal(got.pushNotificationConfig.url, 'http://127.0.0.1:9/audit');
  assert.deepEqual(got.pushNotificationConfig.authentication, { schemes: ['Bearer'], credentials: '***' }, 'credentials are set, their value never read back');
  await assert.rejects(c.setTaskPushNotificationConfig({ taskId: sent.id, pushNotificationConfig: got.pushNotificationConfig }), /credentials/, 'a config read back and set again is refused, naming the field');
  list = await c.listTaskPushNotificationConfig({ id: sent.id });
  assert.deepEqual(list.map((x) => x.pushNotificationConfig.id), [sent.id, 'audit']);
  await c.deleteTaskPushNotificationConfig({ id: sent.id, pushNotificationConfigId: 'audit' });
  list = await c.listTaskPushNotificationConfig({ id: sent.id });
  assert.deepEqual(list.map((x) => x.pushNotificationConfig.id), [sent.id], 'the deleted config is gone');
  await assert.rejects(c.setTaskPushNotificationConfig({ taskId: sent.id, pushNotificationConfig: { url: 'ftp://127.0.0.1/x' } }), /scheme "ftp"/, 'a bad scheme is refused, naming it');
  await work(agent, 'ok', 'done');
});

test('v0.3: a webhook receiver sees every state change of a task sent with a config, in order, with the token', async () => {
  const { createServer } = await import('node:http');
  const seen = [];
  let wake = () => {};
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const task = JSON.parse(body);
      seen.push({ state: task.status.state, kind: task.kind, token: req.headers['x-a2a-notification-token'], id: req.headers['mailroom-notification-id'] });
      res.writeHead(204).end();
      wake();
    });
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  try {
    const { agent, base } = await newAgent('js03-hook');
    const c = await client(base, true);
    const hook = `http://127.0.0.1:${srv.address().port}/hook`;
    await c.sendMessage({ ...message('notify me'), configuration: { blocking: false, pushNotificationConfig: { url: hook, token: 'tok-js' } } });
    await work(agent, 'ok', 'done');
    await withTimeout(new Promise((resolve) => { wake = () => { if (seen.length >= 3) resolve(); }; wake(); }), 10000, 'three notifications');
    assert.deepEqual(seen.map((s) => s.state), ['submitted', 'working', 'completed'], 'every change, in order');
    assert.ok(seen.every((s) => s.kind === 'task' && s.token === 'tok-js' && s.id), 'each a Task with the token and an id');
    assert.equal(new Set(seen.map((s) => s.id)).size, 3, 'each its own id');
  } finally {
    srv.close();
  }
});
