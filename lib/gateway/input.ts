/*
 * A 2026-07-28 server's input_required result, passed through the gateway to a 2026-07-28 client as it came: its
 * input requests under the server's own keys, all of them in one round, so that the client answers them together
 * (as the multi round-trip requests are meant: a server may need several answers at once). Only the server's
 * requestState is the gateway's to give: it is kept here under an id of the gateway's, bound to the caller and to
 * the request it was given for (a state stands for what its server was doing for one caller), and put back when
 * that caller retries that request, which the gateway routes to the same server by its name. A legacy server's
 * question, which the gateway must turn into an input request itself, is ModernFace's.
 */
import { randomUUID } from 'node:crypto';
import { type Caller, sameCaller } from '../protocol/caller.js';
import { CODES } from '../protocol/codes.js';
import { RpcError } from '../protocol/rpc-error.js';
import { KeptFor } from './kept.js';

type Json = Record<string, unknown>;

/** How long a server's requestState is kept for the client's retry (as long as a question of a legacy server waits). */
export const PASSED_STATE_MS = 5 * 60_000;
/** How many are kept at most (the oldest go first). */
const MAX_STATES = 10_000;

/** What a request asks of which server's item: its method and the tool's or prompt's name, or the resource's URI. */
export function targetOf(method: string, params: Json): string {
  const item = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : '';
  return `${method} ${item}`;
}

export class PassedStates {
  readonly #prefix: string;
  /** The servers' states, by the gateway's id for each. */
  readonly #states = new KeptFor<{ state: string; caller: Caller | undefined; target: string }>(MAX_STATES);

  /** `prefix`: what the gateway's requestStates start with (the replica's id, when there are replicas). */
  constructor(prefix = '') {
    this.#prefix = prefix;
  }

  /** A server's answer to `caller`'s `target` request, for the client: an input_required result's requestState the gateway's. */
  passOn(result: Json, caller: Caller | undefined, target: string): Json {
    if (result.resultType !== 'input_required' || typeof result.requestState !== 'string') return result;
    const id = `${this.#prefix}${randomUUID()}`;
    this.#states.set(id, { state: result.requestState, caller, target }, PASSED_STATE_MS);
    return { ...result, requestState: id };
  }

  /**
   * A client's retry `params`, with the server's requestState in place of the gateway's; undefined when its
   * requestState is not one of these. One given to another caller, or for another request, is refused.
   */
  restore(params: Json, caller: Caller | undefined, target: string): Json | undefined {
    const kept = this.#states.get(params.requestState);
    if (kept === undefined) return undefined;
    if (!sameCaller(kept.caller, caller)) throw new RpcError(CODES.invalidParams, 'Invalid requestState: it is not one given to this caller');
    if (kept.target !== target) throw new RpcError(CODES.invalidParams, `Invalid requestState: it was given for ${kept.target}, not ${target}`);
    return { ...params, requestState: kept.state };
  }
}
