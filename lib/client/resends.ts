/*
 * The modern era's (2026-07-28) requests in flight over Streamable HTTP, kept apart from the transport: streams do
 * not resume, so a request whose stream broke before its answer is sent again under a new id when running it twice
 * does no harm, and what comes back under that id (its answer, a listen stream's notifications) is given to the
 * session under the id it knows. HttpChannel holds one; it has no I/O of its own.
 */
import { isObject } from '../jsonrpc.js';
import { META_SUBSCRIPTION_ID } from '../protocol/modern.js';
import type { ReconnectOptions } from './remote.js';
import type { ToolPolicy } from './tool-policy.js';

type Json = Record<string, unknown>;
type Id = string | number;

/** How many times at most a harmless request is sent again after its stream broke. */
const RESEND_ATTEMPTS = 2;

/** What to do with a request whose stream broke: send it again (the attempt's number), or why not. */
type ResendPlan = { first: Id; attempt: number; request: Json } | { first: Id; why: string };

export class Resends {
  /** The requests in flight as sent, by the id the session knows them by. */
  readonly #inFlight = new Map<Id, Json>();
  /** The id a request was sent again under, to the id the session knows it by. */
  readonly #aliases = new Map<Id, Id>();
  /** How many times each request (by its first id) was sent again. */
  readonly #resent = new Map<Id, number>();
  #nextAlias = 1;
  readonly #policy: ToolPolicy;

  constructor(policy: ToolPolicy) {
    this.#policy = policy;
  }

  /** A request sent on its own. */
  track(request: Json): void {
    this.#inFlight.set(request.id as Id, request);
  }

  /** Whether the request the session knows by `first` still waits for its answer. */
  pending(first: Id): boolean {
    return this.#inFlight.has(first);
  }

  /**
   * A message from the server as the session must see it: a notification of a listen stream opened again carries
   * the id it was opened under, and the session knows the first.
   */
  incoming(msg: unknown): unknown {
    if (this.#aliases.size === 0 || !isObject(msg) || !('method' in msg) || 'id' in msg) return msg;
    if (!isObject(msg.params) || !isObject(msg.params._meta)) return msg;
    const alias = msg.params._meta[META_SUBSCRIPTION_ID];
    const first = alias === undefined ? undefined : this.#aliases.get(alias as Id);
    if (first === undefined) return msg;
    return { ...msg, params: { ...msg.params, _meta: { ...msg.params._meta, [META_SUBSCRIPTION_ID]: first } } };
  }

  /**
   * The answer `msg` to request `id` came (learnt from when `modern`, a tools/list's): the request is done.
   * Returns the id the session knows it by when it was sent again under `id`.
   */
  answered(id: Id, msg: Json, server: string, modern: boolean): Id | undefined {
    const first = this.#aliases.get(id);
    if (modern) this.#policy.learn(this.#inFlight.get(first ?? id), msg, server);
    this.#inFlight.delete(first ?? id);
    this.#resent.delete(first ?? id);
    if (first !== undefined) this.#aliases.delete(id);
    return first;
  }

  /**
   * The stream that owed the answer to `id` broke: whether to send the request again (at most RESEND_ATTEMPTS
   * times, and never one that running twice could harm unless `reconnect.resend` is 'all'), or why not; a request
   * not sent again is forgotten.
   */
  plan(id: Id, reconnect: Required<ReconnectOptions> | false): ResendPlan {
    const first = this.#aliases.get(id) ?? id;
    this.#aliases.delete(id);
    const request = this.#inFlight.get(first);
    const attempts = this.#resent.get(first) ?? 0;
    const safe = request !== undefined && reconnect !== false && (reconnect.resend === 'all' || this.#policy.harmlessTwice(request));
    if (request !== undefined && reconnect !== false && safe && attempts < Math.min(RESEND_ATTEMPTS, reconnect.maxAttempts)) {
      this.#resent.set(first, attempts + 1);
      return { first, attempt: attempts + 1, request };
    }
    this.#inFlight.delete(first);
    this.#resent.delete(first);
    const why =
      reconnect === false
        ? 'and reconnect is off'
        : !safe
          ? `before its answer; it may have run, and it is not sent again since running it twice could do harm (${String(request?.method)}; reconnect.resend: 'all' sends every request again)`
          : `${attempts + 1} times`;
    return { first, why };
  }

  /** The request the session knows by `first`, under a new id to send it again with. */
  again(first: Id, request: Json): Json {
    const alias = `mcp-frame-again-${this.#nextAlias++}`;
    this.#aliases.set(alias, first);
    return { ...request, id: alias };
  }

  /** The session cancelled `asked`: it is forgotten; returns the ids it was sent again under, to abandon too. */
  cancel(asked: Id): Id[] {
    this.#inFlight.delete(asked);
    this.#resent.delete(asked);
    const aliases: Id[] = [];
    for (const [alias, first] of this.#aliases) {
      if (first !== asked) continue;
      this.#aliases.delete(alias);
      aliases.push(alias);
    }
    return aliases;
  }
}
