// The native Mailroom API the interop tests need (plain fetch): register an
// agent, and play its worker: lease the task the A2A client sent, post the
// result. MAILROOM_URL is the daemon under test (set by
// daemon/a2a/interop_node_test.go).
import { randomUUID } from 'node:crypto';

export const URL_ = process.env.MAILROOM_URL;
if (!URL_) {
  throw new Error('MAILROOM_URL is not set: run these tests with go test ./daemon/a2a -run TestJSSDKInterop');
}

const deadline = (ms) => Date.now() + ms;

async function call(method, path, body) {
  const res = await fetch(URL_ + path, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

// newAgent registers a fresh agent (a unique id per test) and returns its
// id and A2A base URL, with the trailing slash the SDKs need.
export async function newAgent(prefix) {
  const agent = `${prefix}-${randomUUID().slice(0, 8)}@local`;
  const r = await call('PUT', `/a2a/agents/${agent}`, {
    name: 'Coder', description: 'writes code', version: '1.0.0',
    skills: [{ id: 'code', name: 'Code', description: 'writes code', tags: ['go'], examples: ['fix the bug'] }],
    default_input_modes: ['text/plain'], default_output_modes: ['text/plain'],
  });
  if (r.status !== 200) throw new Error(`registering ${agent}: ${r.status} ${JSON.stringify(r.body)}`);
  return { agent, base: `${URL_}/agents/${agent}/` };
}

// lease waits (10 s at most) for a task queued for agent and leases it.
export async function lease(agent) {
  const until = deadline(10000);
  while (Date.now() < until) {
    const r = await call('POST', `/a2a/tasks/next?recipient=${encodeURIComponent(agent)}`);
    if (r.status !== 200) throw new Error(`lease: ${r.status} ${JSON.stringify(r.body)}`);
    if (r.body.task) return { task: r.body.task, lease: r.body.lease };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no task reached ${agent} within 10 s`);
}

// answer posts the worker's result; it returns the HTTP status.
export async function answer({ task, lease: l }, status, text) {
  const body = { task_id: task.id, status, lease_id: l.lease_id, content: [{ type: 'text', text }] };
  if (status === 'error') {
    body.content = [];
    body.error_message = text;
  }
  const r = await call('POST', '/a2a/results', body);
  return r.status;
}

// work leases the next task for agent and answers it.
export async function work(agent, status, text) {
  const held = await lease(agent);
  const code = await answer(held, status, text);
  if (code !== 200) throw new Error(`posting the result: HTTP ${code}`);
  return held;
}

// withTimeout fails a promise that takes longer than ms.
export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms); }),
  ]);
}

// collect reads a stream to its end (10 s at most).
export async function collect(stream, what) {
  const events = [];
  await withTimeout((async () => { for await (const ev of stream) events.push(ev); })(), 10000, what);
  return events;
}
