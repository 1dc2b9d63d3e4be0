// A remote A2A agent built on the official JavaScript SDK, for the
// daemon's outbound client to call (daemon/a2a/remote_node_test.go).
//
//   node remote/server.mjs v03   @a2a-js/sdk 0.3.14: JSON-RPC v0.3
//   node remote/server.mjs v1    @a2a-js/sdk 1.3.0: JSON-RPC and HTTP+JSON v1.0
//
// It listens on 127.0.0.1 (a free port) and prints one line,
// {"url": "http://127.0.0.1:PORT"}, once it does. The card is at
// /.well-known/agent-card.json. The executor acts on the first word of
// the text it gets, like the a2a-go one in the Go tests: "fail", "reject",
// "ask" (the answer completes the task), "stream", "slow" (until released),
// "hang" (until canceled); anything else is echoed back as the artifact.
//
// /control/* lets the test steer it without timing: POST pace (from now on
// a task whose first word is none of the above waits a random 0-250 ms
// before its task is published, then 0-400 ms before it completes with the
// artifact "done " and its text, as the kill -9 suites' a2a-go remote does;
// GET done lists the messageIds of the tasks so completed), POST release (every
// slow task finishes), POST restart (a new, empty task store: every task
// is forgotten, every call under way cut), POST down and up (every call answered 503, and again
// served), GET seen (the messages received and the credentials they came
// with).
//
// SDK calls used, checked in node_modules/a2a-v{03,1}/dist/server: the
// DefaultRequestHandler(card, store, executor), InMemoryTaskStore, the
// express handlers jsonRpcHandler, restHandler (1.3.0), agentCardHandler
// and UserBuilder.noAuthentication; executors publish events on the bus
// (0.3.14: objects with kind; 1.3.0: AgentEvent.* of proto-shaped objects).
import express from 'express';
import { randomUUID } from 'node:crypto';

const sdk = process.argv[2];
if (sdk !== 'v03' && sdk !== 'v1') {
  console.error('usage: node remote/server.mjs v03|v1');
  process.exit(2);
}
const server = await import(sdk === 'v03' ? 'a2a-v03/server' : 'a2a-v1/server');
const web = await import(sdk === 'v03' ? 'a2a-v03/server/express' : 'a2a-v1/server/express');
const root = sdk === 'v1' ? await import('a2a-v1') : null;

const seen = [];
let paced = false;
const done = [];
const pause = (max) => new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * max)));
let released = false;
let waiters = [];
const release = () => {
  released = true;
  waiters.forEach((w) => w());
  waiters = [];
};
const untilReleased = () => (released ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve)));
const cancels = new Map(); // taskId -> resolve

const skills = [{ id: 'code', name: 'Code', description: 'writes JS', tags: ['js'], examples: ['fix the bug'] }];

// The two SDKs' event shapes, behind one small interface.
const v03 = {
  textOf: (m) => (m.parts.find((p) => p.kind === 'text') || {}).text || '',
  parts: (m) => m.parts,
  text: (t) => ({ kind: 'text', text: t }),
  agentMessage: (ctx, t) => ({ kind: 'message', role: 'agent', messageId: randomUUID(), taskId: ctx.taskId, contextId: ctx.contextId, parts: [{ kind: 'text', text: t }] }),
  task: (ctx, state) => ({ kind: 'task', id: ctx.taskId, contextId: ctx.contextId, status: { state, timestamp: new Date().toISOString() }, history: [ctx.userMessage], artifacts: [] }),
  status: (ctx, state, message, final) => ({ kind: 'status-update', taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message, timestamp: new Date().toISOString() }, final }),
  artifact: (ctx, artifactId, parts, append) => ({ kind: 'artifact-update', taskId: ctx.taskId, contextId: ctx.contextId, artifact: { artifactId, name: 'out', parts }, append, lastChunk: false }),
  publish: (bus, ev) => bus.publish(ev),
  state: { submitted: 'submitted', working: 'working', completed: 'completed', failed: 'failed', rejected: 'rejected', inputRequired: 'input-required', canceled: 'canceled' },
};

const v1 = root && {
  textOf: (m) => (m.parts.find((p) => p.content?.$case === 'text') || { content: { value: '' } }).content.value,
  parts: (m) => m.parts,
  text: (t) => ({ content: { $case: 'text', value: t }, metadata: undefined, filename: '', mediaType: '' }),
  agentMessage: (ctx, t) => ({ messageId: randomUUID(), taskId: ctx.taskId, contextId: ctx.contextId, role: root.Role.ROLE_AGENT, parts: [v1.text(t)], metadata: undefined, extensions: [], referenceTaskIds: [] }),
  task: (ctx, state) => root_task(ctx, state),
  status: (ctx, state, message) => ({ kind: 'statusUpdate', data: { taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined } }),
  artifact: (ctx, artifactId, parts, append) => ({ kind: 'artifactUpdate', data: { taskId: ctx.taskId, contextId: ctx.contextId, artifact: { artifactId, name: 'out', description: '', parts, metadata: undefined, extensions: [] }, append, lastChunk: false, metadata: undefined } }),
  publish: (bus, ev) => bus.publish(ev),
  state: root && {
    submitted: root.TaskState.TASK_STATE_SUBMITTED, working: root.TaskState.TASK_STATE_WORKING, completed: root.TaskState.TASK_STATE_COMPLETED,
    failed: root.TaskState.TASK_STATE_FAILED, rejected: root.TaskState.TASK_STATE_REJECTED, inputRequired: root.TaskState.TASK_STATE_INPUT_REQUIRED,
    canceled: root.TaskState.TASK_STATE_CANCELED,
  },
};
function root_task(ctx, state) {
  return { kind: 'task', data: { id: ctx.taskId, contextId: ctx.contextId, status: { state, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined } };
}
const w = sdk === 'v03' ? v03 : v1;

class Executor {
  async execute(ctx, bus) {
    seen.push({ message: ctx.userMessage });
    const S = w.state;
    const text = w.textOf(ctx.userMessage);
    const status = (state, t) => w.publish(bus, w.status(ctx, state, t ? w.agentMessage(ctx, t) : undefined, ![S.working, S.submitted].includes(state)));
    const finish = () => bus.finished();
    const first = text.split(/\s+/)[0];
    if (paced && !ctx.task && !['fail', 'reject', 'ask', 'stream', 'slow', 'hang'].includes(first)) {
      // The remote's own pace of work (what the kill -9 suites break
      // around): the daemon's send is answered only once the task is.
      await pause(250);
      w.publish(bus, w.task(ctx, S.submitted));
      await pause(400);
      w.publish(bus, w.artifact(ctx, randomUUID(), [w.text('done ' + text)], false));
      status(S.completed);
      done.push(ctx.userMessage.messageId);
      return finish();
    }
    // Every execution starts with the task (1.3.0 requires it, on a
    // continuation too).
    w.publish(bus, w.task(ctx, ctx.task ? S.working : S.submitted));
    if (ctx.task) {
      w.publish(bus, w.artifact(ctx, randomUUID(), [w.text('using ' + text)], false));
      status(S.completed);
      return finish();
    }
    switch (text.split(/\s+/)[0]) {
      case 'fail':
        status(S.failed, 'the disk is full');
        return finish();
      case 'reject':
        status(S.rejected, 'not my kind of work');
        return finish();
      case 'ask':
        status(S.inputRequired, 'which database?');
        return finish();
      case 'stream': {
        status(S.working);
        const id = randomUUID();
        w.publish(bus, w.artifact(ctx, id, [w.text('one')], false));
        w.publish(bus, w.artifact(ctx, id, [w.text('two')], true));
        w.publish(bus, w.artifact(ctx, id, [w.text('three')], true));
        status(S.completed);
        return finish();
      }
      case 'slow':
        status(S.working);
        await untilReleased();
        w.publish(bus, w.artifact(ctx, randomUUID(), [w.text('slowly done')], false));
        status(S.completed);
        return finish();
      case 'hang':
        status(S.working);
        await new Promise((resolve) => cancels.set(ctx.taskId, resolve));
        status(S.canceled);
        return finish();
      default:
        w.publish(bus, w.artifact(ctx, randomUUID(), w.parts(ctx.userMessage), false));
        status(S.completed);
        return finish();
    }
  }

  async cancelTask(taskId, bus) {
    const resolve = cancels.get(taskId);
    if (resolve) {
      cancels.delete(taskId);
      resolve();
      return;
    }
    bus.finished();
  }
}

const app = express();
let base = '';
let card;
let handlers;

function build() {
  const requestHandler = new server.DefaultRequestHandler(card, new server.InMemoryTaskStore(), new Executor());
  const userBuilder = web.UserBuilder.noAuthentication;
  const h = {
    rpc: web.jsonRpcHandler({ requestHandler, userBuilder }),
    card: web.agentCardHandler({ agentCardProvider: requestHandler }),
  };
  if (sdk === 'v1') h.rest = web.restHandler({ requestHandler, userBuilder });
  return h;
}

// down: every call but the controls is answered 503, as a remote that is
// failing. live: the calls under way (streams among them), cut by a
// restart as a killed process cuts them.
let down = false;
const live = new Set();
app.use((req, res, next) => {
  if (req.path.startsWith('/control/')) {
    next();
    return;
  }
  if (down) {
    res.status(503).json({ error: 'the test took this remote down' });
    return;
  }
  if (!req.path.startsWith('/.well-known/')) {
    seen.push({ path: req.path, authorization: req.get('authorization') || '', apiKey: req.get('x-api-key') || '' });
    live.add(res);
    res.on('close', () => live.delete(res));
  }
  next();
});
app.post('/control/down', (_req, res) => { down = true; res.json({}); });
app.post('/control/up', (_req, res) => { down = false; res.json({}); });
app.post('/control/release', (_req, res) => { release(); res.json({}); });
app.post('/control/pace', (_req, res) => { paced = true; res.json({}); });
app.get('/control/done', (_req, res) => res.json(done));
app.post('/control/restart', (_req, res) => {
  handlers = build();
  for (const r of live) r.socket?.destroy();
  live.clear();
  res.json({});
});
app.get('/control/seen', (_req, res) => res.json(seen));
app.use('/.well-known/agent-card.json', (req, res, next) => handlers.card(req, res, next));
app.use('/a2a/jsonrpc', (req, res, next) => handlers.rpc(req, res, next));
app.use('/a2a/rest', (req, res, next) => (handlers.rest ? handlers.rest(req, res, next) : next()));

const listener = app.listen(0, '127.0.0.1', () => {
  base = `http://127.0.0.1:${listener.address().port}`;
  card = sdk === 'v03'
    ? {
      name: 'JS Coder 0.3', description: 'an @a2a-js/sdk 0.3.14 agent', version: '0.3.14', protocolVersion: '0.3.0',
      url: `${base}/a2a/jsonrpc`, preferredTransport: 'JSONRPC',
      capabilities: { streaming: true, pushNotifications: false }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills,
    }
    : {
      name: 'JS Coder 1.0', description: 'an @a2a-js/sdk 1.3.0 agent', version: '1.3.0',
      supportedInterfaces: [
        { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
        { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
      ],
      provider: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [] }, securitySchemes: {}, securityRequirements: [],
      defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: skills.map((s) => ({ ...s, inputModes: [], outputModes: [], securityRequirements: [] })), signatures: [],
    };
  handlers = build();
  console.log(JSON.stringify({ url: base }));
});

// The test ends the server by closing its stdin (or killing it).
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
