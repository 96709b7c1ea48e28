/*
 * Rate limits on tools/call, per caller (the signed-in caller by issuer and subject, else the client's address):
 * serve's own (--rate-limit) and the rate of each policy rule that allows the tool. A call over a limit runs
 * nothing: over Streamable HTTP its POST is 429 with Retry-After, on a legacy SSE session its error goes on the
 * stream. Counted by the replicas' store when there is one (a limit holds across replicas), else in this process;
 * a store that does not answer leaves the count to this process meanwhile (each replica then holds it alone).
 */
import { isObject, isRequest, type JsonRpcRequest } from '../../jsonrpc.js';
import type { Policy } from '../../gateway/policy.js';
import { LocalRates, type Rate, type TakeRate } from '../../gateway/rate.js';
import type { Caller } from '../../protocol/caller.js';
import { Refusal } from '../../protocol/refusal.js';
import { CODES } from '../../protocol/codes.js';

/** A call over a limit: the request, the limit (as written), and how long until a call would be taken. */
export interface OverLimit {
  request: JsonRpcRequest;
  rate: string;
  waitMs: number;
}

export class CallLimits {
  readonly #limit: Rate | undefined;
  readonly #policy: { readonly current: Policy | undefined } | undefined;
  readonly #shared: TakeRate | undefined;
  readonly #local = new LocalRates();
  readonly #toolSearch: boolean;

  /**
   * `limit`: every caller's; `shared`: the store's count (undefined: this process's); `toolSearch`: a call_tool
   * counts as a call of the tool it names.
   */
  constructor(limit: Rate | undefined, policy: { readonly current: Policy | undefined } | undefined, shared?: TakeRate, toolSearch = false) {
    this.#limit = limit;
    this.#policy = policy;
    this.#shared = shared;
    this.#toolSearch = toolSearch;
  }

  /** No limit to count: no --rate-limit and no policy (a policy's rules may carry rates, and a reload may add one). */
  get none(): boolean {
    return this.#limit === undefined && this.#policy?.current === undefined;
  }

  /** The tools/call requests of `messages` over a limit of their caller; each other one counted against its limits. */
  async over(messages: readonly unknown[], caller: Caller | undefined, address: string | undefined): Promise<OverLimit[]> {
    const who = caller === undefined ? `address ${address ?? 'unknown'}` : `caller ${caller.subject}`;
    const out: OverLimit[] = [];
    for (const msg of messages) {
      if (!isRequest(msg) || msg.method !== 'tools/call' || !isObject(msg.params) || typeof msg.params.name !== 'string') continue;
      const args = msg.params.arguments;
      const named =
        this.#toolSearch && msg.params.name === 'call_tool' && isObject(args) && typeof args.name === 'string' ? args.name : msg.params.name;
      const limits = [
        ...(this.#limit === undefined ? [] : [{ key: 'serve', rate: this.#limit }]),
        ...(this.#policy?.current?.rates(caller, named) ?? []),
      ];
      for (const { key, rate } of limits) {
        const waitMs = await this.#take(`${key} ${who}`, rate);
        if (waitMs > 0) {
          out.push({ request: msg, rate: rate.text, waitMs });
          break;
        }
      }
    }
    return out;
  }

  #take(key: string, rate: Rate): Promise<number> {
    const local = (): number => this.#local.take(key, rate);
    return this.#shared === undefined ? Promise.resolve(local()) : this.#shared(key, rate).catch(local);
  }
}

/** The JSON-RPC error of a call over a limit (data.retryAfterMs), as a 429 Refusal with Retry-After. */
export function overLimit(over: OverLimit): Refusal {
  const seconds = Math.max(1, Math.ceil(over.waitMs / 1000));
  return new Refusal(429, `rate limit ${over.rate} of tools/call reached: try again in ${seconds} s`, {
    headers: { 'Retry-After': String(seconds) },
    code: CODES.serverError,
    id: over.request.id,
    data: { retryAfterMs: over.waitMs },
  });
}
