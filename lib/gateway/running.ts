/*
 * The calls a gateway has sent on to its servers and that may still run there: those waited for, and those the
 * client cancelled or that timed out, for CANCELLED_RUNS_MS after (a server MAY go on with a request it was told to
 * cancel). A server's question, log or progress is attributed among these: to the call the server's Connection
 * names, or to the only call waited for at that server when every call that may still run there is one caller's;
 * never a pick between callers. Progress tokens are the gateway's own, random, each known to one server.
 */
import { randomUUID } from 'node:crypto';
import { type Caller, sameCaller } from '../protocol/caller.js';
import type { Upstream } from './upstream.js';

/**
 * How long a call the client cancelled still counts as running at its server: a server MAY go on with a request
 * it was told to cancel, so for this long a question or a log of that server could still be the cancelled
 * call's, and is attributed to no other caller. (serve's modern hub counts its own cancelled requests the same.)
 */
export const CANCELLED_RUNS_MS = 60_000;

/** A client's request sent on to a server. */
interface Forwarded {
  /** The client's id of the request. */
  id: unknown;
  up: Upstream;
  abort: AbortController;
  cancelled: boolean;
  caller: Caller | undefined;
}

export class RunningCalls {
  /** The requests sent on, by the client's id (as a map key), while the client waits for them. */
  readonly #byKey = new Map<string, Forwarded>();
  /** Every request sent on that may still run at its server. */
  readonly #running = new Set<Forwarded>();
  /** The gateway's progress tokens, to the server given each and the client's own token. */
  readonly #tokens = new Map<string, { up: Upstream; token: unknown }>();
  readonly #limbo = new Set<NodeJS.Timeout>();

  /** A request of the client's (`key`: its id as a map key) sent on to `up` now. */
  begin(key: string, id: unknown, up: Upstream, caller: Caller | undefined): Forwarded {
    const forwarded: Forwarded = { id, up, abort: new AbortController(), cancelled: false, caller };
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
    if (forwarded === undefined) return;
    forwarded.cancelled = true;
    forwarded.abort.abort(reason);
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
