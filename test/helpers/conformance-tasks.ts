// The tasks extension (SEP-2663, io.modelcontextprotocol/tasks) in the conformance fixture: the tools its
// scenarios name and a task board behind `tasks/get`, `tasks/update` and `tasks/cancel`, written from the
// scenarios' own "Server Implementation Requirements" (the SDK 2.x has no tasks surface of its own). A task lives
// in the board of its process: the HTTP handler makes a server per request, so the board is passed in, one per
// fixture.
import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/server';
import { acceptedContent, inputRequired, MissingRequiredClientCapabilityError } from '@modelcontextprotocol/server';
import { z } from 'zod';

export const TASKS = 'io.modelcontextprotocol/tasks';
/** The task's lifetime and the poll interval it suggests. */
const TTL_MS = 300_000;
const POLL_MS = 200;

type Json = Record<string, unknown>;
type Status = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

interface Task {
  taskId: string;
  status: Status;
  createdAt: string;
  lastUpdatedAt: string;
  result?: Json;
  error?: { code: number; message: string };
  /** The input the task waits for, by key, and what resolves each. */
  asks: Map<string, { request: Json; answer: (response: Json) => void }>;
  cancel: () => void;
}

/** A request's context as the fixture's tools see it. */
interface Ctx {
  mcpReq: { envelope?: Json; inputResponses?: Json; requestState<T = unknown>(): T | undefined };
}

/** What a task's work can do: ask the client (resolves with its response), and learn it was cancelled. */
interface Work {
  ask(request: Json): Promise<Json>;
  cancelled: Promise<never>;
}

/** An error a task's work throws to end the task failed (a protocol error, not a tool's). */
class ProtocolFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const text = (value: string, isError = false) => ({ content: [{ type: 'text' as const, text: value }], ...(isError ? { isError: true } : {}) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());
const rpcError = (code: number, message: string) => Object.assign(new Error(message), { code });

export class TaskBoard {
  readonly #tasks = new Map<string, Task>();

  /** Creates a task running `work` now; resolves once it is on the board (a tasks/get finds it). */
  create(work: (w: Work) => Promise<Json>): Json {
    const now = new Date().toISOString();
    let cancel!: () => void;
    const cancelled = new Promise<never>((_, reject) => {
      cancel = () => reject(new Error('cancelled'));
    });
    cancelled.catch(() => undefined);
    const task: Task = { taskId: randomUUID(), status: 'working', createdAt: now, lastUpdatedAt: now, asks: new Map(), cancel };
    this.#tasks.set(task.taskId, task);
    const settle = (status: Status, outcome: { result?: Json; error?: { code: number; message: string } }) => {
      if (task.status === 'cancelled') return;
      Object.assign(task, { status, ...outcome, lastUpdatedAt: new Date().toISOString() });
      task.asks.clear();
    };
    let asked = 0;
    const ask = (request: Json) =>
      new Promise<Json>((resolve) => {
        const key = `input_${++asked}`;
        task.asks.set(key, {
          request,
          answer: (response) => {
            task.asks.delete(key);
            if (task.asks.size === 0 && task.status === 'input_required') this.#touch(task, 'working');
            resolve(response);
          },
        });
        this.#touch(task, 'input_required');
      });
    Promise.race([work({ ask, cancelled }), cancelled]).then(
      (result) => settle('completed', { result }),
      (err: unknown) => {
        if (err instanceof ProtocolFailure) settle('failed', { error: { code: err.code, message: err.message } });
        else if (task.status !== 'cancelled') settle('failed', { error: { code: -32603, message: String((err as Error).message) } });
      },
    );
    const { taskId, status, createdAt, lastUpdatedAt } = task;
    return { resultType: 'task', taskId, status, createdAt, lastUpdatedAt, ttlMs: TTL_MS, pollIntervalMs: POLL_MS };
  }

  #touch(task: Task, status: Status): void {
    task.status = status;
    task.lastUpdatedAt = new Date().toISOString();
  }

  #find(params: Json): Task {
    const task = typeof params.taskId === 'string' ? this.#tasks.get(params.taskId) : undefined;
    if (task === undefined) throw rpcError(-32602, `unknown task: ${JSON.stringify(params.taskId)}`);
    return task;
  }

  get(params: Json): Json {
    const task = this.#find(params);
    const { taskId, status, createdAt, lastUpdatedAt, result, error } = task;
    const detailed: Json = { taskId, status, createdAt, lastUpdatedAt, ttlMs: TTL_MS, pollIntervalMs: POLL_MS };
    if (status === 'input_required') detailed.inputRequests = Object.fromEntries([...task.asks].map(([key, ask]) => [key, ask.request]));
    if (status === 'completed' && result !== undefined) detailed.result = result;
    if (status === 'failed' && error !== undefined) detailed.error = error;
    return detailed;
  }

  update(params: Json): Json {
    const task = this.#find(params);
    const responses = typeof params.inputResponses === 'object' && params.inputResponses !== null ? (params.inputResponses as Json) : {};
    for (const [key, response] of Object.entries(responses)) task.asks.get(key)?.answer(response as Json);
    return {};
  }

  cancel(params: Json): Json {
    const task = this.#find(params);
    if (task.status === 'working' || task.status === 'input_required') {
      this.#touch(task, 'cancelled');
      task.asks.clear();
      task.cancel();
    }
    return {};
  }
}

/** Whether the request declared the tasks extension (in its own client capabilities). */
function declaresTasks(ctx: Ctx): boolean {
  const capabilities = ctx.mcpReq.envelope?.['io.modelcontextprotocol/clientCapabilities'] as Json | undefined;
  const extensions = capabilities?.extensions as Json | undefined;
  return extensions?.[TASKS] !== undefined;
}

const MISSING_TASKS = () =>
  new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS]: {} } } }, `this request needs the ${TASKS} extension`);

/** The scenarios' tools, and the tasks methods, on `server`. */
export function registerTasks(server: McpServer, board: TaskBoard): void {
  const required = new Set(['failing_job', 'test_tool_with_task']);
  const taskTool = (name: string, taskSupport: 'optional' | 'required', inputSchema: z.ZodObject, work: (args: never, w: Work) => Promise<Json>) =>
    server.registerTool(
      name,
      { description: name.replaceAll('_', ' '), inputSchema, execution: { taskSupport } } as never,
      (async (args: never, ctx: Ctx) => {
        if (declaresTasks(ctx)) return board.create((w) => work(args, w));
        return work(args, { ask: () => Promise.reject(MISSING_TASKS()), cancelled: new Promise<never>(() => undefined) });
      }) as never,
    );

  server.registerTool('greet', { description: 'greet', inputSchema: z.object({ name: z.string() }) }, (async ({ name }: { name: string }) =>
    text(`Hello, ${name}!`)) as never);
  taskTool('slow_compute', 'optional', z.object({ seconds: z.number().optional(), label: z.string().optional() }), async ({ seconds, label }) => {
    await sleep((seconds ?? 1) * 1000);
    return text(`computed ${label ?? ''} after ${seconds ?? 1}s`);
  });
  taskTool('failing_job', 'required', z.object({}), async () => {
    await sleep(1000);
    return text('the job failed', true);
  });
  taskTool('protocol_error_job', 'optional', z.object({}), async () => {
    await sleep(100);
    throw new ProtocolFailure(-32603, 'the job crashed');
  });
  const elicit = (message: string, properties: Json) => ({
    method: 'elicitation/create',
    params: { message, requestedSchema: { type: 'object', properties } },
  });
  taskTool('confirm_delete', 'optional', z.object({ filename: z.string().optional() }), async ({ filename }, w) => {
    const answer = await w.ask(elicit(`Delete ${filename ?? 'the file'}?`, { confirm: { type: 'boolean' } }));
    return text(`${answer.action === 'accept' ? 'deleted' : 'kept'} ${filename ?? 'the file'}`);
  });
  taskTool('multi_input', 'optional', z.object({}), async (_args, w) => {
    const answers = await Promise.all([
      w.ask(elicit('First?', { name: { type: 'string' } })),
      w.ask(elicit('Second?', { name: { type: 'string' } })),
    ]);
    return text(`got ${answers.map((a) => JSON.stringify((a.content as Json | undefined)?.name)).join(' and ')}`);
  });
  // Round 1 asks (multi round-trip, no task yet); round 2, with the answer, becomes a task.
  server.registerTool(
    'test_tool_with_task',
    { description: 'test tool with task', inputSchema: z.object({}), execution: { taskSupport: 'required' } } as never,
    (async (_args: never, ctx: Ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses as never, 'user_name', z.object({ name: z.string() }));
      if (!answer) {
        return inputRequired({
          inputRequests: {
            user_name: inputRequired.elicit({
              message: 'What is your name?',
              requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
            } as never),
          },
        });
      }
      return board.create(async () => {
        await sleep(100);
        return text(`Task done for ${answer.name}`);
      });
    }) as never,
  );

  const methods = server.server as unknown as {
    setRequestHandler(method: string, schemas: { params: z.ZodType }, handler: (params: Json, ctx: Ctx) => unknown): void;
    _requestHandlers: Map<string, (request: { params?: Json }, ctx: Ctx) => unknown>;
  };
  // A tool that needs a task is refused before it runs to a request that did not declare the extension: a tool's
  // handler cannot (McpServer makes what it throws a tool error), so the SDK's tools/call handler is wrapped.
  const call = methods._requestHandlers.get('tools/call')!;
  methods._requestHandlers.set('tools/call', (request, ctx) => {
    if (required.has(String(request.params?.name)) && !declaresTasks(ctx)) throw MISSING_TASKS();
    return call(request, ctx);
  });
  const params = { params: z.looseObject({ taskId: z.string() }) };
  const gated = (handle: (params: Json, ctx: Ctx) => Json) => (given: Json, ctx: Ctx) => {
    if (!declaresTasks(ctx)) throw MISSING_TASKS();
    return handle(given, ctx);
  };
  methods.setRequestHandler(
    'tasks/get',
    params,
    gated((p) => board.get(p)),
  );
  // The SDK takes a request's inputResponses into its context.
  methods.setRequestHandler(
    'tasks/update',
    params,
    gated((p, ctx) => board.update({ inputResponses: ctx.mcpReq.inputResponses, ...p })),
  );
  methods.setRequestHandler(
    'tasks/cancel',
    params,
    gated((p) => board.cancel(p)),
  );
}
