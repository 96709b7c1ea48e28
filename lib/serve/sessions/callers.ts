/*
 * The 2026-07-28 requests when some server is reached with each caller's own token (its entry's auth mode
 * `exchange`). Such a request carries no session, so the connection that holds a caller's exchanged token cannot be
 * a session's: each signed-in caller's requests go to a gateway of that caller's own, made at its first request
 * and closed once it has been idle a while, in front of those servers and (as one session of its own) of the
 * gateway every modern request shares, which holds the other servers. serve's own requests, and those of no
 * signed-in caller, go to that shared gateway, where servers reached by exchange are not.
 *
 * To the modern hub this is one child: it sends each request with its caller, and hears every gateway's answers
 * and notifications (the ids and tokens are the hub's own, unique across them; the hub keeps only its own).
 */
import { EventEmitter } from 'node:events';
import type { ConnectionError, ExitStatus } from '../../client/errors.js';
import type { Gateway } from '../../gateway/gateway.js';
import { taskKeptMs } from '../../gateway/tasks.js';
import { idKey, isObject, isRequest, isResponse, rpcError } from '../../jsonrpc.js';
import { type Caller, tokenOf } from '../../protocol/caller.js';
import type { ParamHeader } from '../../protocol/param-headers.js';
import { CODES } from '../../protocol/codes.js';

/** How long a caller's gateway stays open with nothing in flight. */
const CALLER_IDLE_MS = 5 * 60_000;
/** Callers with a gateway at once; past it, the one idle longest is closed, or the request refused when none is idle. */
const MAX_CALLERS = 1024;

interface CallerGatewaysOptions {
  /** Its name (the label of the modern requests' child). */
  name: string;
  /** The gateway every modern request shares. */
  shared: Gateway;
  /** A new gateway for `caller`'s requests. */
  open(caller: Caller): Gateway;
  /** `caller` sends through `gateway` now (a host that refreshed its token presents the new one). */
  heard(gateway: Gateway, caller: Caller): void;
  idleMs?: number;
  maxCallers?: number;
}

/** A caller's gateway and its requests in flight (the id each was sent with, by key). */
interface Held {
  readonly subject: string;
  readonly gateway: Gateway;
  readonly ids: Map<string, unknown>;
  timer: NodeJS.Timeout | undefined;
  /** Until when a task it made is kept (its tasks live in it): it stays open that long, idle or not. */
  tasksUntil: number;
}

export class CallerGateways extends EventEmitter {
  readonly name: string;
  readonly started: Promise<void> = Promise.resolve();
  readonly pid = undefined;
  readonly #shared: Gateway;
  readonly #options: CallerGatewaysOptions;
  readonly #idleMs: number;
  readonly #max: number;
  /** By subject, the least recently used first. */
  readonly #held = new Map<string, Held>();
  /** Which caller's gateway each request in flight went to, by key (for its cancellation). */
  readonly #inFlight = new Map<string, Held>();
  #closing: Promise<ExitStatus> | undefined;

  constructor(options: CallerGatewaysOptions) {
    super();
    this.#options = options;
    this.name = options.name;
    this.#shared = options.shared;
    this.#idleMs = options.idleMs ?? CALLER_IDLE_MS;
    this.#max = options.maxCallers ?? MAX_CALLERS;
    this.#shared.on('message', (msg: unknown, related?: unknown) => this.emit('message', msg, related));
    this.#shared.once('close', () => void this.close());
  }

  /** The callers' gateways open now. */
  get gateways(): Gateway[] {
    return [...this.#held.values()].map((held) => held.gateway);
  }

  send(msg: unknown, caller?: Caller): Promise<void> {
    if (this.#closing !== undefined) return Promise.reject(this.endError('the request'));
    if (isObject(msg) && msg.method === 'notifications/cancelled' && isObject(msg.params)) {
      const held = this.#inFlight.get(idKey(msg.params.requestId));
      return (held?.gateway ?? this.#shared).send(msg, caller);
    }
    if (caller === undefined || tokenOf(caller) === undefined || isResponse(msg)) return this.#shared.send(msg, caller);
    let held: Held;
    try {
      held = this.#for(caller);
    } catch (err) {
      return Promise.reject(err);
    }
    this.#options.heard(held.gateway, caller);
    if (!isRequest(msg)) return held.gateway.send(msg, caller);
    const key = idKey(msg.id);
    held.ids.set(key, msg.id);
    this.#inFlight.set(key, held);
    clearTimeout(held.timer);
    held.timer = undefined;
    return held.gateway.send(msg, caller).catch((err: Error) => {
      this.#done(held, key);
      throw err;
    });
  }

  /** What a tool declares in x-mcp-header, as the shared gateway or any caller's knows it (the server's schema, the same for each). */
  declaredHeaders(exposed: string): readonly ParamHeader[] | undefined {
    for (const gateway of [this.#shared, ...this.gateways]) {
      const known = gateway.declaredHeaders(exposed);
      if (known !== undefined) return known;
    }
    return undefined;
  }

  endError(what: string): ConnectionError {
    return this.#shared.endError(what);
  }

  policyChanged(): void {
    for (const gateway of [this.#shared, ...this.gateways]) void gateway.policyChanged();
  }

  /** Holds the shared gateway's servers' output (see Gateway.holdInput); a caller's gateway holds nothing of another's. */
  holdInput(): () => void {
    return this.#shared.holdInput();
  }

  close(): Promise<ExitStatus> {
    this.#closing ??= (async () => {
      await Promise.all([...this.#held.values()].map((held) => this.#end(held)));
      const status = await this.#shared.close();
      this.emit('close', status);
      return status;
    })();
    return this.#closing;
  }

  /** `caller`'s gateway, made at its first request; the least recently used idle one closed to make room. */
  #for(caller: Caller): Held {
    const found = this.#held.get(caller.subject);
    if (found !== undefined) {
      this.#held.delete(caller.subject);
      this.#held.set(caller.subject, found);
      return found;
    }
    if (this.#held.size >= this.#max) {
      const idle = [...this.#held.values()].find((held) => held.ids.size === 0 && held.tasksUntil <= Date.now());
      if (idle === undefined) throw new Error(`${this.#max} signed-in callers have requests in flight already: try again shortly`);
      void this.#end(idle);
    }
    const held: Held = { subject: caller.subject, gateway: this.#options.open(caller), ids: new Map(), timer: undefined, tasksUntil: 0 };
    this.#held.set(caller.subject, held);
    held.gateway.on('message', (msg: unknown, related?: unknown) => {
      if (isResponse(msg)) {
        const kept = taskKeptMs((msg as { result?: unknown }).result);
        if (kept !== undefined) held.tasksUntil = Math.max(held.tasksUntil, Date.now() + kept);
        this.#done(held, idKey(msg.id));
      }
      this.emit('message', msg, related);
    });
    held.gateway.once('close', () => this.#gone(held));
    return held;
  }

  /**
   * A request of `held`'s answered (or never sent): once none is left, its gateway closes after the idle time, or
   * once the tasks it made are no longer kept, whichever is later.
   */
  #done(held: Held, key: string): void {
    if (!held.ids.delete(key)) return;
    this.#inFlight.delete(key);
    if (held.ids.size > 0 || this.#held.get(held.subject) !== held) return;
    held.timer = setTimeout(() => void this.#end(held), Math.max(this.#idleMs, held.tasksUntil - Date.now()));
    held.timer.unref();
  }

  async #end(held: Held): Promise<void> {
    clearTimeout(held.timer);
    if (this.#held.get(held.subject) === held) this.#held.delete(held.subject);
    await held.gateway.close();
  }

  /** A caller's gateway closed: what it had in flight is answered with why, so that no request waits for nothing. */
  #gone(held: Held): void {
    clearTimeout(held.timer);
    if (this.#held.get(held.subject) === held) this.#held.delete(held.subject);
    const why = held.gateway.endError('the caller’s gateway').message;
    for (const [key, id] of [...held.ids]) {
      this.#done(held, key);
      this.emit('message', rpcError(id as string | number, CODES.serverError, why));
    }
  }
}
