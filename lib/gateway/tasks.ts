/*
 * The tasks extension (SEP-2663, io.modelcontextprotocol/tasks) through the gateway. A server decides itself
 * whether a tools/call becomes a task, and only for a request that declares the extension: the gateway declares
 * it to the server for the requests of the callers that declared it, and for no other. A task the server made is
 * given to the client under an id of the gateway's, the server's name and its own id, so two servers' ids never
 * collide, and kept (for its ttlMs) with the server and the caller that made it: `tasks/get`, `tasks/update` and
 * `tasks/cancel` go to that server under its own id, and only for that caller (to another, the task is unknown, as
 * an id it never saw). The gateway advertises the extension when one of its servers does.
 *
 * The tasks are the replica's own: with replicas, a task's id starts with the replica's (as a requestState does),
 * so that a request naming it can be carried to the replica whose server runs it.
 */
import { isObject } from '../jsonrpc.js';
import { type Caller, sameCaller } from '../protocol/caller.js';
import { CODES } from '../protocol/codes.js';
import { RpcError } from '../protocol/rpc-error.js';
import { KeptFor } from './kept.js';
import type { Upstream } from './upstream.js';

type Json = Record<string, unknown>;

/** The extension's identifier, under `capabilities.extensions`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The extension's methods the gateway routes by task. */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/** What a request declares to a server for the extension. */
const DECLARED = { extensions: { [TASKS_EXTENSION]: {} } };

/** How long a task is kept when its server names no ttlMs, and how many are kept at most. */
const DEFAULT_TTL_MS = 60 * 60_000;
const MAX_TASKS = 10_000;
/** How long a server may take to answer a tasks request (they ask after a task, or hand it input: no work waits). */
const TASK_REQUEST_MS = 60_000;

/** A task a server made: where it runs, its id there, and whose it is. */
interface Kept {
  up: Upstream;
  taskId: string;
  caller: Caller | undefined;
}

/** Whether client capabilities declare the extension. */
function declaresTasks(capabilities: Json | undefined): boolean {
  return isObject(capabilities?.extensions) && capabilities.extensions[TASKS_EXTENSION] !== undefined;
}

/** The capabilities to declare to a server for a request that declared `capabilities`: the extension, when it did. */
export function tasksDeclared(capabilities: Json | undefined): Json | undefined {
  return declaresTasks(capabilities) ? DECLARED : undefined;
}

/** `capabilities` (a gateway's, merged) with the extension when one of `ups` offers it. */
export function withTasks(capabilities: Json, ups: readonly Upstream[]): Json {
  return ups.some((up) => declaresTasks(up.capabilities)) ? { ...capabilities, extensions: { [TASKS_EXTENSION]: {} } } : capabilities;
}

/** How long the task a result makes is kept (its ttlMs, or an hour), or undefined for a result that makes none. */
export function taskKeptMs(result: unknown): number | undefined {
  if (!isObject(result) || result.resultType !== 'task' || typeof result.taskId !== 'string') return undefined;
  return typeof result.ttlMs === 'number' && result.ttlMs > 0 ? result.ttlMs : DEFAULT_TTL_MS;
}

export class GatewayTasks {
  readonly #prefix: string;
  /** The tasks made through the gateway, by the gateway's id, each for its ttlMs. */
  readonly #tasks = new KeptFor<Kept>(MAX_TASKS);

  /** `prefix`: what the gateway's task ids start with (the replica's id, when there are replicas). */
  constructor(prefix = '') {
    this.#prefix = prefix;
  }

  /** A server's answer to a call of `caller`: a task it made is kept, and given under the gateway's id. */
  created(up: Upstream, caller: Caller | undefined, result: unknown): unknown {
    const ttl = taskKeptMs(result);
    if (ttl === undefined || !isObject(result)) return result;
    const taskId = result.taskId as string;
    const id = `${this.#prefix}${encodeURIComponent(up.name)}:${taskId}`;
    this.#tasks.set(id, { up, taskId, caller }, ttl);
    return { ...result, taskId: id };
  }

  /** The client's `method` (tasks/get, tasks/update, tasks/cancel) of a task: to the server that made it. */
  async request(method: string, params: Json, caller: Caller | undefined, capabilities: Json): Promise<unknown> {
    if (!declaresTasks(capabilities)) {
      throw new RpcError(
        CODES.missingRequiredClientCapability,
        `${method} needs the ${TASKS_EXTENSION} extension, which the request did not declare`,
        {
          requiredCapabilities: DECLARED,
        },
      );
    }
    const id = params.taskId;
    const kept = this.#tasks.get(id);
    if (kept === undefined || !sameCaller(kept.caller, caller)) {
      throw new RpcError(CODES.invalidParams, `Unknown task: ${JSON.stringify(id)}`);
    }
    const result = await kept.up.request(method, { ...params, taskId: kept.taskId }, { capabilities: DECLARED, caller, timeoutMs: TASK_REQUEST_MS });
    return isObject(result) && result.taskId === kept.taskId ? { ...result, taskId: id } : result;
  }
}
