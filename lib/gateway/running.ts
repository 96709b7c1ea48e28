/*
 * The calls a gateway has sent on to its servers and that may still run there: those waited for, and those the
 * client cancelled or that timed out, for CANCELLED_RUNS_MS after (a server MAY go on with a request it was told to
 * cancel). A server's question, log or progress is attributed among these: to the call the server's Connection
 * names, or to the only call waited for at that server when every call that may still run there is one caller's;
 * never a pick between callers. Progress tokens are the gateway's own, random, each known to one server.
 */
import { randomUUID } from 'node:crypto';
import type { RequestOptions } from '../client/connection.js';
import { type Caller, sameCaller } from '../protocol/caller.js';
import { INPUT_CAPABILITIES } from '../protocol/modern.js';
import { tasksDeclared } from './tasks.js';
import type { Upstream } from './upstream.js';

/**
 * How long a call the client cancelled still counts as running at its server: a server MAY go on with a request
 * it was told to cancel, so for this long a question or a log of that server could still be the cancelled
 * call's, and is attributed to no other caller. (serve's modern hub counts its own cancelled requests the same.)
 */
export const CANCELLED_RUNS_MS = 60_000;

/** A client's request: its id, the id as a map key, who sent it, and for a 2026-07-28 request what it is beyond that. */
export interface Call {
  key: string;
  id: unknown;
  caller: Caller | undefined;
  /** The session it came in (its label), for the audit trail; none for a 2026-07-28 request. */
  session?: string | undefined;
  modern?: ModernCall;
}

/** What a 2026-07-28 request is beyond its id (see ModernFace). */
export interface ModernCall {
  /** The client capabilities the request declared. */
  capabilities: Record<string, unknown>;
  /**
   * Answers the client's request now (input_required, or an error) while the call goes on at its server; false
   * when it was answered so already.
   */
  interrupt(outcome: { result: Record<string, unknown> } | { error: Error }): boolean;
  /** The call's outcome at its server, whichever request of the client's (the first or a retry) waits for it. */
  rest?: Promise<unknown>;
}

/** A client's request sent on to a server. */
export interface Forwarded {
  /** The client's id of the request (of its latest retry, for a modern call answered input_required). */
  id: unknown;
  up: Upstream;
  abort: AbortController;
  cancelled: boolean;
  caller: Caller | undefined;
  modern: ModernCall | undefined;
}

export class RunningCalls {
  /** The requests sent on, by the client's id (as a map key), while the client waits for them. */
  readonly #byKey = new Map<string, Forwarded>();
  /** Every request sent on that may still run at its server. */
  readonly #running = new Set<Forwarded>();
  /** The gateway's progress tokens, to the server given each and the client's own token. */
  readonly #tokens = new Map<string, { up: Upstream; token: unknown }>();
  readonly #limbo = new Set<NodeJS.Timeout>();

  /** The client's request `call` sent on to `up` now. */
  begin(call: Call, up: Upstream): Forwarded {
    const forwarded: Forwarded = { id: call.id, up, abort: new AbortController(), cancelled: false, caller: call.caller, modern: call.modern };
    const { key } = call;
    this.#byKey.set(key, forwarded);
    this.#running.add(forwarded);
    return forwarded;
  }

  /** The request the client waits for by `key`, if it was sent on. */
  get(key: string): Forwarded | undefined {
    return this.#byKey.get(key);
  }

  /** The client answered: its request is no longer waited for under `key`. */
  forget(key: string): void {
    this.#byKey.delete(key);
  }

  /** The client cancelled the request `key`: aborted, with `reason`. */
  cancel(key: string, reason: string): void {
    const forwarded = this.#byKey.get(key);
    if (forwarded !== undefined) abort(forwarded, reason);
  }

  /** A modern call goes on for the client's retry `call` (its requestState named it): waited for under its key now. */
  adopt(call: Call, forwarded: Forwarded): void {
    forwarded.id = call.id;
    forwarded.modern = call.modern;
    this.#byKey.set(call.key, forwarded);
  }

  /** A progress token of the gateway's for `up`, standing for the client's `token` until dropped. */
  token(up: Upstream, token: unknown): string {
    const own = `mcp-frame-${randomUUID()}`;
    this.#tokens.set(own, { up, token });
    return own;
  }

  /** The client's token a server's progress names, when that server was given it. */
  clientToken(up: Upstream, own: unknown): { token: unknown } | undefined {
    const given = typeof own === 'string' ? this.#tokens.get(own) : undefined;
    return given === undefined || given.up !== up ? undefined : given;
  }

  dropToken(own: string): void {
    this.#tokens.delete(own);
  }

  /** A request no longer waited for: gone from the running ones, or, when its server may go on with it, later. */
  settle(forwarded: Forwarded, unfinished: boolean): void {
    if (!unfinished) {
      this.#running.delete(forwarded);
      return;
    }
    forwarded.cancelled = true;
    const timer = setTimeout(() => {
      this.#limbo.delete(timer);
      this.#running.delete(forwarded);
    }, CANCELLED_RUNS_MS);
    timer.unref();
    this.#limbo.add(timer);
  }

  /**
   * The call a server's message belongs to: the one the Connection names (`related`, for a modern server's
   * input requests), else the only call waited for at that server, when every request that may still run there
   * (a cancelled one counts) is its caller's. Never a pick between callers: then it is nobody's.
   */
  ownerOf(up: Upstream, related?: unknown): Forwarded | undefined {
    if (related !== undefined) {
      const named = related as Forwarded;
      return this.#running.has(named) && !named.cancelled ? named : undefined;
    }
    let only: Forwarded | undefined;
    for (const forwarded of this.#running) {
      if (forwarded.up !== up || forwarded.cancelled) continue;
      if (only !== undefined) return undefined;
      only = forwarded;
    }
    if (only === undefined) return undefined;
    for (const forwarded of this.#running) if (forwarded.up === up && !sameCaller(forwarded.caller, only.caller)) return undefined;
    return only;
  }

  /** The gateway closed: no timer is left behind. */
  close(): void {
    for (const timer of this.#limbo) clearTimeout(timer);
    this.#limbo.clear();
  }
}

/**
 * How a client's request is sent on to its server: aborted with it, for its caller, its server's questions
 * related to it; a modern request declares to its server what its client declared of what the gateway relays
 * (the questions it passes on, and the tasks extension: see tasks.ts), so that the server answers as it would
 * that client, and a modern server's input_required result comes back as it is, for the client.
 */
export function sendOptions(forwarded: Forwarded, timeoutMs: number): RequestOptions {
  const options: RequestOptions = { signal: forwarded.abort.signal, timeoutMs, related: forwarded, caller: forwarded.caller };
  const declared = forwarded.modern?.capabilities;
  if (declared === undefined) return options;
  const capabilities: Record<string, unknown> = {};
  for (const capability of Object.values(INPUT_CAPABILITIES)) if (declared[capability] !== undefined) capabilities[capability] = declared[capability];
  // A modern server's input requests go to the client as they came (see input.ts).
  return { ...options, capabilities: { ...capabilities, ...tasksDeclared(declared) }, passInput: forwarded.up.era === 'modern' };
}

/** Aborts a request sent on, with `reason`: the server is told, and its messages are no one's from now on. */
export function abort(forwarded: Forwarded, reason: string): void {
  forwarded.cancelled = true;
  forwarded.abort.abort(reason);
}
