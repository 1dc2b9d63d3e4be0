// @a2a-js/sdk 1.3.0 (the v1.0 wire) against a real daemon, every scenario
// over JSON-RPC and over HTTP+JSON. SDK calls used, checked in
// node_modules/a2a-v1/dist/client/index.d.ts and
// multitransport-client-*.d.ts: ClientFactory (createFromUrl),
// ClientFactoryOptions.createFrom, Client (sendMessage, sendMessageStream,
// getTask, cancelTask, listTasks, resubscribeTask), TaskState and Role
// from the package root, TaskNotFoundError, TaskNotCancelableError and
// UnsupportedOperationError from a2a-v1/errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions } from 'a2a-v1/client';
import { TaskState, Role } from 'a2a-v1';
import { TaskNotFoundError, TaskNotCancelableError, UnsupportedOperationError } from 'a2a-v1/errors';
import { newAgent, lease, answer, work, withTimeout, collect } from './mailroom.mjs';

async function client(base, transport, polling) {
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    clientConfig: { polling },
    preferredTransports: [transport],
  }));
  return factory.createFromUrl(base);
}

const message = (text, messageId = randomUUID(), contextId = '') => ({
  tenant: '',
  message: {
    messageId, contextId, taskId: '', role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined, extensions: [], referenceTaskIds: [],
  },
  configuration: undefined,
  metadata: undefined,
});

// answerTo is the caller's answer to task's question: a message with the
// task's id and context.
const answerTo = (task, text) => {
  const m = message(text, randomUUID(), task.contextId);
  m.message.taskId = task.id;
  return m;
};

const textOf = (part) => (part?.content?.$case === 'text' ? part.content.value : undefined);

for (const transport of ['JSONRPC', 'HTTP+JSON']) {
  test(`v1.0 ${transport}: the card, a send, the worker, the completed task`, async () => {
    const { agent, base } = await newAgent('js1-send');
    const c = await client(base, transport, true);
    assert.equal(c.protocolVersion, '1.0', 'the client picked a v1.0 interface');
    const sent = await c.sendMessage(message('fix the flaky test'));
    assert.ok(sent.id, 'a send answers a task');
    assert.equal(sent.status.state, TaskState.TASK_STATE_SUBMITTED, 'a new task is submitted');
    const held = await lease(agent);
    assert.equal(held.task.id, sent.id, 'the worker leases the A2A task under the same id');
    assert.equal(held.task.intent_text, 'fix the flaky test', 'the message text is the task intent');
    assert.equal((await c.getTask({ tenant: '', id: sent.id })).status.state, TaskState.TASK_STATE_WORKING, 'a leased task is working');
    assert.equal(await answer(held, 'ok', 'fixed'), 200, 'the worker posts its result');
    const done = await c.getTask({ tenant: '', id: sent.id });
    assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED, 'completed');
    assert.equal(textOf(done.artifacts[0]?.parts[0]), 'fixed', 'the result is the artifact');
  });

  test(`v1.0 ${transport}: a blocking send waits for the worker`, async () => {
    const { agent, base } = await newAgent('js1-block');
    const c = await client(base, transport, false);
    const worker = work(agent, 'ok', 'released');
    const res = await withTimeout(c.sendMessage(message('tag a release')), 10000, 'blocking send');
    await worker;
    assert.equal(res.status.state, TaskState.TASK_STATE_COMPLETED, 'the answer is the finished task');
    assert.equal(textOf(res.artifacts[0]?.parts[0]), 'released', 'with its artifact');
  });

  test(`v1.0 ${transport}: a stream shows the task, working, the artifact and completed`, async () => {
    const { agent, base } = await newAgent('js1-stream');
    const c = await client(base, transport, false);
    const worker = work(agent, 'ok', 'streamed');
    const events = await collect(c.sendMessageStream(message('stream me')), 'stream');
    await worker;
    const cases = events.map((e) => e.payload?.$case);
    assert.equal(cases[0], 'task', `the stream starts with the task (${cases})`);
    assert.equal(events[0].payload.value.status.state, TaskState.TASK_STATE_SUBMITTED, 'as sent');
    assert.ok(events.some((e) => e.payload?.$case === 'statusUpdate' && e.payload.value.status.state === TaskState.TASK_STATE_WORKING), 'a working update');
    assert.ok(events.some((e) => e.payload?.$case === 'artifactUpdate' && textOf(e.payload.value.artifact.parts[0]) === 'streamed'), 'the artifact update');
    const last = events.at(-1).payload;
    assert.equal(last.$case, 'statusUpdate', 'the stream ends on a status update');
    assert.equal(last.value.status.state, TaskState.TASK_STATE_COMPLETED, 'completed');
  });

  test(`v1.0 ${transport}: a failing worker ends the stream failed`, async () => {
    const { agent, base } = await newAgent('js1-fail');
    const c = await client(base, transport, false);
    const worker = work(agent, 'error', 'boom');
    const events = await collect(c.sendMessageStream(message('break')), 'stream');
    await worker;
    const last = events.at(-1).payload;
    assert.equal(last.value.status.state, TaskState.TASK_STATE_FAILED, 'failed');
    assert.equal(textOf(last.value.status.message?.parts[0]), 'boom', 'the error is the status message');
  });

  test(`v1.0 ${transport}: cancel a queued and a leased task; a finished one cannot be`, async () => {
    const { agent, base } = await newAgent('js1-cancel');
    const c = await client(base, transport, true);
    const queued = await c.sendMessage(message('never mind'));
    assert.equal((await c.cancelTask({ tenant: '', id: queued.id, metadata: undefined })).status.state, TaskState.TASK_STATE_CANCELED, 'a queued task is canceled');
    const inflight = await c.sendMessage(message('long job'));
    const held = await lease(agent);
    assert.equal((await c.cancelTask({ tenant: '', id: inflight.id, metadata: undefined })).status.state, TaskState.TASK_STATE_CANCELED, 'a leased task is canceled');
    assert.equal(await answer(held, 'ok', 'too late'), 409, "the worker's late result is refused");
    await assert.rejects(c.cancelTask({ tenant: '', id: inflight.id, metadata: undefined }), TaskNotCancelableError, 'a finished task cannot be canceled');
  });

  test(`v1.0 ${transport}: an unknown task is TaskNotFound`, async () => {
    const { base } = await newAgent('js1-missing');
    const c = await client(base, transport, true);
    await assert.rejects(c.getTask({ tenant: '', id: randomUUID() }), TaskNotFoundError, 'get of an unknown task');
  });

  test(`v1.0 ${transport}: subscribe follows a submitted task to completed`, async () => {
    const { agent, base } = await newAgent('js1-sub');
    const c = await client(base, transport, true);
    const sent = await c.sendMessage(message('watch me'));
    const worker = work(agent, 'ok', 'watched');
    const events = await collect(c.resubscribeTask({ tenant: '', id: sent.id }), 'subscribe');
    await worker;
    assert.equal(events.at(-1)?.payload?.value?.status?.state, TaskState.TASK_STATE_COMPLETED, 'the stream ends completed');
  });

  test(`v1.0 ${transport}: list the agent's tasks by context; a retried message is the same task`, async () => {
    const { base } = await newAgent('js1-list');
    const c = await client(base, transport, true);
    const ctx = randomUUID();
    const id = randomUUID();
    const a = await c.sendMessage(message('first', id, ctx));
    const b = await c.sendMessage(message('first', id, ctx));
    assert.equal(b.id, a.id, 'a retried message is answered with its task');
    await c.sendMessage(message('second', randomUUID(), ctx));
    await c.sendMessage(message('elsewhere', randomUUID(), randomUUID()));
    const list = await c.listTasks({ tenant: '', contextId: ctx, status: 0, pageToken: '' });
    assert.equal(list.tasks.length, 2, 'two tasks in the context');
    assert.ok(list.tasks.every((t) => t.contextId === ctx), 'all of the context');
    assert.equal(list.totalSize, 2, 'totalSize counts them');
  });

  test(`v1.0 ${transport}: the worker asks, the caller answers with taskId, the task completes`, async () => {
    const { agent, base } = await newAgent('js1-conv');
    const c = await client(base, transport, false);
    let worker = work(agent, 'input_required', 'which database?');
    const asked = await withTimeout(c.sendMessage(message('migrate the schema')), 10000, 'blocking send');
    await worker;
    assert.equal(asked.status.state, TaskState.TASK_STATE_INPUT_REQUIRED, 'a blocking send answers at the question');
    assert.equal(asked.status.message?.role, Role.ROLE_AGENT, "the question is the agent's");
    assert.equal(textOf(asked.status.message?.parts[0]), 'which database?', 'the question is the status message');

    worker = (async () => {
      const held = await lease(agent);
      assert.deepEqual(held.task.turns.map((t) => [t.role, t.content[0].text]), [['worker', 'which database?'], ['sender', 'use staging']],
        'the next lease carries the question and the answer');
      assert.equal(await answer(held, 'ok', 'migrated on staging'), 200, 'the worker finishes');
    })();
    const done = await withTimeout(c.sendMessage(answerTo(asked, 'use staging')), 10000, 'blocking answer');
    await worker;
    assert.equal(done.id, asked.id, 'the answer continues the task');
    assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED, 'and the task completes');
    assert.equal(textOf(done.artifacts[0]?.parts[0]), 'migrated on staging', 'with the result');
    assert.deepEqual(done.history.map((m) => [m.role, textOf(m.parts[0])]),
      [[Role.ROLE_USER, 'migrate the schema'], [Role.ROLE_AGENT, 'which database?'], [Role.ROLE_USER, 'use staging']], 'every turn is in the history, in order');
    const listed = await c.listTasks({ tenant: '', contextId: asked.contextId, status: TaskState.TASK_STATE_COMPLETED, pageToken: '' });
    assert.deepEqual(listed.tasks.map((t) => t.id), [asked.id], 'listed by its state');
  });

  test(`v1.0 ${transport}: a stream follows two turns`, async () => {
    const { agent, base } = await newAgent('js1-conv-stream');
    const c = await client(base, transport, false);
    let worker = work(agent, 'auth_required', 'sign in at https://id.example/device');
    const first = await collect(c.sendMessageStream(message('deploy')), 'first stream');
    await worker;
    const asked = first.at(-1).payload;
    assert.equal(asked.$case, 'statusUpdate', 'the first stream ends on a status update');
    assert.equal(asked.value.status.state, TaskState.TASK_STATE_AUTH_REQUIRED, 'at the question');
    const waiting = await c.listTasks({ tenant: '', contextId: asked.value.contextId, status: TaskState.TASK_STATE_AUTH_REQUIRED, pageToken: '' });
    assert.deepEqual(waiting.tasks.map((t) => t.id), [asked.value.taskId], 'ListTasks finds it by its state');
    worker = work(agent, 'ok', 'deployed');
    const second = await collect(c.sendMessageStream(answerTo({ id: asked.value.taskId, contextId: asked.value.contextId }, 'signed in')), 'second stream');
    await worker;
    assert.equal(second[0]?.payload?.$case, 'task', "the answer's stream starts with the task");
    assert.equal(second[0].payload.value.id, asked.value.taskId, 'the same task');
    assert.equal(second[0].payload.value.status.state, TaskState.TASK_STATE_SUBMITTED, 'queued again');
    assert.equal(second.at(-1).payload.value.status.state, TaskState.TASK_STATE_COMPLETED, 'the second turn completes');
  });

  test(`v1.0 ${transport}: an answer to a task that is not waiting is UnsupportedOperation`, async () => {
    const { base } = await newAgent('js1-conv-refused');
    const c = await client(base, transport, true);
    const queued = await c.sendMessage(message('queued work'));
    await assert.rejects(c.sendMessage(answerTo(queued, 'more')), UnsupportedOperationError, 'an answer to a queued task');
    await assert.rejects(c.sendMessage(answerTo({ id: randomUUID(), contextId: queued.contextId }, 'more')), TaskNotFoundError, 'an answer to an unknown task');
  });
}

for (const transport of ['JSONRPC', 'HTTP+JSON']) {
  test(`v1.0 ${transport}: a send with a push config; create, get, list and delete configs`, async () => {
    const { agent, base } = await newAgent('js1-push');
    const c = await client(base, transport, true);
    const hook = 'http://127.0.0.1:9/hooks/js1';
    const m = message('notify me');
    m.configuration = { acceptedOutputModes: [], historyLength: undefined, returnImmediately: true,
      taskPushNotificationConfig: { tenant: '', id: '', taskId: '', url: hook, token: 'tok-send', authentication: undefined } };
    const sent = await c.sendMessage(m);
    assert.ok(sent.id, 'a send with a config answers a task');
    let list = await c.listTaskPushNotificationConfig({ tenant: '', taskId: sent.id, pageSize: 0, pageToken: '' });
    assert.equal(list.configs.length, 1, 'the send set one config');
    assert.equal(list.configs[0].url, hook);
    assert.equal(list.configs[0].token, '***', 'a token is set, its value never read back');
    assert.equal(list.configs[0].taskId, sent.id);

    const created = await c.createTaskPushNotificationConfig({ tenant: '', id: 'audit', taskId: sent.id, url: 'http://127.0.0.1:9/audit', token: '',
      authentication: { scheme: 'Bearer', credentials: 's3cret' } });
    assert.equal(created.id, 'audit');
    const got = await c.getTaskPushNotificationConfig({ tenant: '', taskId: sent.id, id: 'audit' });
    assert.equal(got.url, 'http://127.0.0.1:9/audit');
    assert.equal(got.authentication?.scheme, 'Bearer');
    assert.equal(got.authentication?.credentials, '***', 'credentials are set, their value never read back');
    list = await c.listTaskPushNotificationConfig({ tenant: '', taskId: sent.id, pageSize: 0, pageToken: '' });
    assert.deepEqual(list.configs.map((x) => x.id), [sent.id, 'audit']);
    await c.deleteTaskPushNotificationConfig({ tenant: '', taskId: sent.id, id: 'audit' });
    list = await c.listTaskPushNotificationConfig({ tenant: '', taskId: sent.id, pageSize: 0, pageToken: '' });
    assert.deepEqual(list.configs.map((x) => x.id), [sent.id], 'the deleted config is gone');
    await assert.rejects(c.createTaskPushNotificationConfig({ tenant: '', id: '', taskId: sent.id, url: 'https://hooks.elsewhere.example/x', token: '', authentication: undefined }),
      /push_allow_hosts/, 'a host not allowed is refused, naming the setting');
    await work(agent, 'ok', 'done');
  });
}

test('v1.0 HTTP+JSON: a webhook receiver sees every state change as a StreamResponse, in order, with the token', async () => {
  const { createServer } = await import('node:http');
  const seen = [];
  let wake = () => {};
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const sr = JSON.parse(body);
      seen.push({ state: sr.task?.status?.state, token: req.headers['x-a2a-notification-token'] });
      res.writeHead(200).end();
      wake();
    });
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  try {
    const { agent, base } = await newAgent('js1-hook');
    const c = await client(base, 'HTTP+JSON', true);
    const m = message('notify me');
    m.configuration = { acceptedOutputModes: [], historyLength: undefined, returnImmediately: true,
      taskPushNotificationConfig: { tenant: '', id: '', taskId: '', url: `http://127.0.0.1:${srv.address().port}/hook`, token: 'tok-js1', authentication: undefined } };
    await c.sendMessage(m);
    await work(agent, 'ok', 'done');
    await withTimeout(new Promise((resolve) => { wake = () => { if (seen.length >= 3) resolve(); }; wake(); }), 10000, 'three notifications');
    assert.deepEqual(seen.map((s) => s.state), ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'], 'every change, in order');
    assert.ok(seen.every((s) => s.token === 'tok-js1'), 'each with the token');
  } finally {
    srv.close();
  }
});
