// @a2a-js/sdk 0.3.14 (the v0.3 wire, JSON-RPC) against a real daemon.
// SDK calls used, checked in node_modules/a2a-v03/dist/client/index.d.ts:
// ClientFactory (createFromUrl), ClientFactoryOptions.createFrom, Client
// (sendMessage, sendMessageStream, getTask, cancelTask, resubscribeTask),
// TaskNotFoundError, TaskNotCancelableError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions, TaskNotFoundError, TaskNotCancelableError } from 'a2a-v03/client';
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
