/*
 * The gateway's 2026-07-28 face: what a modern client's request needs beyond the routing both eras share, so that
 * serve's modern requests reach the gateway as they came (no legacy session in between, no translation down and
 * up again). `server/discover` is answered from the upstreams' capabilities, merged; the methods the revision
 * removed are refused; every result is complete with cache hints.
 *
 * A server's question during a modern call (a legacy server's own request, or a modern server's input request,
 * which its Connection hands to the gateway as one) becomes an input_required result of that call, and the call
 * goes on at its server: the client's retry, with the requestState it was given, answers the question and waits
 * for the rest of the same call (or the next question). A question the calling request did not declare it can
 * answer gets that client -32021 (MissingRequiredClientCapability) and the call is cancelled; roots, which a
 * legacy server asks for at moments of its own, are refused to the server and the call goes on.
 *
 * A listen (subscriptions/listen) gets what the gateway can give: the list changes it notifies, and updates of
 * the resources it agreed to (each URI subscribed upstream once, for however many listens, and unsubscribed when
 * the last one ends).
 */
import { randomUUID } from 'node:crypto';
import { RpcError } from '../protocol/rpc-error.js';
import { isObject } from '../jsonrpc.js';
import { CODES } from '../protocol/codes.js';
import { sameCaller } from '../protocol/caller.js';
import { legacyAgreed, type ListenFilter, wantedBy } from '../protocol/listen.js';
import { discoverFrom, INPUT_CAPABILITIES, META_SUBSCRIPTION_ID, modernResult, REMOVED_METHODS } from '../protocol/modern.js';
import { abort, type Call, type Forwarded, type ModernCall, type RunningCalls } from './running.js';
import { PassedStates, targetOf } from './input.js';
import { GatewayTasks, TASK_METHODS, withTasks } from './tasks.js';
import type { Upstream } from './upstream.js';

type Json = Record<string, unknown>;

/** How long a server's question waits for the modern client to come back with the answer. */
const INPUT_WAIT_MS = 5 * 60_000;

/** What a listen's request settles with when it ends: it has no answer (the client closed its stream). */
export const LISTEN_ENDED = Symbol('listen ended');

/** What the face needs of its gateway. */
interface ModernHost {
  /** Starts the upstreams, declaring the questions the face relays; the gateway's initialize result. */
  start(): Promise<Json>;
  /** A request as both eras route it. */
  dispatch(call: Call, method: string, params: Json): Promise<unknown>;
  /** A resource request of the gateway's own (subscribe, unsubscribe) to the server that offers `uri`; whether it succeeded. */
  uriRequest(method: 'resources/subscribe' | 'resources/unsubscribe', uri: string): Promise<boolean>;
  /** A message to the client. */
  emit(msg: Json): void;
  calls: RunningCalls;
  /** The upstreams now. */
  ups(): readonly Upstream[];
}

/** A server's question waiting for the client's retry. */
interface Suspended {
  forwarded: Forwarded;
  answer(value: unknown): void;
  refuse(error: Error): void;
  timer: NodeJS.Timeout;
}

export class ModernFace {
  readonly #host: ModernHost;
  /** What requestStates start with: the replica's id, when there are replicas (see HttpFront's carrying). */
  readonly #statePrefix: string;
  readonly #suspended = new Map<string, Suspended>();
  /** Open listens, by the key of the request that opened each. */
  readonly #listens = new Map<string, { id: unknown; agreed: ListenFilter; end(): void }>();
  /** The resources subscribed at their servers for listens: how many listens watch each, and whether it took. */
  readonly #subscriptions = new Map<string, { count: number; taken: Promise<boolean> }>();

  /** The tasks its servers made (the tasks extension; see tasks.ts). */
  readonly #tasks: GatewayTasks;
  /** The requestStates of modern servers' input_required results passed on to clients (see input.ts). */
  readonly #passed: PassedStates;

  constructor(host: ModernHost, statePrefix: string | undefined) {
    this.#host = host;
    this.#statePrefix = statePrefix === undefined ? '' : `${statePrefix}.`;
    this.#tasks = new GatewayTasks(this.#statePrefix);
    this.#passed = new PassedStates(this.#statePrefix);
  }

  /** A server's answer to a call: a task it made is given under the gateway's id (see GatewayTasks.created). */
  created(up: Upstream, caller: Call['caller'], result: unknown): unknown {
    return this.#tasks.created(up, caller, result);
  }

  /** A modern request (its modern `_meta` taken off): its result, or LISTEN_ENDED for a listen. */
  async request(call: Call & { modern: ModernCall }, method: string, params: Json): Promise<unknown> {
    if (REMOVED_METHODS.has(method)) throw new RpcError(CODES.methodNotFound, `Method not found: ${method} is not part of the 2026-07-28 revision`);
    const init = await this.#host.start();
    if (method === 'server/discover') return discoverFrom({ ...init, capabilities: withTasks(init.capabilities as Json, this.#host.ups()) });
    if (TASK_METHODS.has(method)) {
      const result = await this.#tasks.request(method, params, call.caller, call.modern.capabilities);
      return isObject(result) ? modernResult(method, result) : result;
    }
    if (method === 'subscriptions/listen') return this.#listen(call, params, init);
    const interrupted = new Promise<unknown>((resolve, reject) => {
      let done = false;
      call.modern.interrupt = (outcome) => {
        if (done) return false;
        done = true;
        if ('error' in outcome) reject(outcome.error);
        else resolve(outcome.result);
        return true;
      };
    });
    const target = targetOf(method, params);
    // A retry with the state of a modern server's input_required result goes to that server, its own state back in.
    const passed = typeof params.requestState === 'string' ? this.#passed.restore(params, call.caller, target) : undefined;
    if (passed === undefined && typeof params.requestState === 'string') {
      const forwarded = this.#resume(params.requestState, call, params.inputResponses);
      const rest = forwarded.modern?.rest;
      if (rest === undefined) throw new RpcError(CODES.invalidParams, 'Invalid requestState: it names no call of this era');
      call.modern.rest = rest;
      this.#host.calls.adopt(call, forwarded);
    } else {
      call.modern.rest = this.#host
        .dispatch(call, method, passed ?? params)
        .then((result) => (isObject(result) ? modernResult(method, this.#passed.passOn(result, call.caller, target)) : result));
      // Once the client was answered input_required, the rest may settle with no one waiting yet.
      call.modern.rest.catch(() => undefined);
    }
    return Promise.race([call.modern.rest, interrupted]);
  }

  /**
   * A server's question `method` during the modern call `forwarded`: its client is answered input_required now,
   * and the question's answer comes with the client's retry.
   */
  ask(forwarded: Forwarded, modern: ModernCall, method: string, params: unknown): Promise<unknown> {
    const needed = INPUT_CAPABILITIES[method];
    if (method === 'roots/list' && modern.capabilities.roots === undefined) {
      return Promise.reject(new RpcError(CODES.methodNotFound, 'the client did not declare roots'));
    }
    if (needed !== undefined && modern.capabilities[needed] === undefined) {
      const why = `the server needs the ${needed} capability, which the request did not declare`;
      modern.interrupt({ error: new RpcError(CODES.missingRequiredClientCapability, why, { requiredCapabilities: { [needed]: {} } }) });
      abort(forwarded, `the client did not declare ${needed}`);
      return Promise.reject(new RpcError(CODES.serverError, `the client did not declare ${needed}`));
    }
    const state = `${this.#statePrefix}${randomUUID()}`;
    return new Promise((answer, refuse) => {
      const timer = setTimeout(() => {
        if (!this.#suspended.delete(state)) return;
        refuse(new RpcError(CODES.serverError, 'the client did not come back with an answer'));
        abort(forwarded, 'the client did not come back with an answer');
      }, INPUT_WAIT_MS);
      this.#suspended.set(state, { forwarded, answer, refuse, timer });
      const inputRequests = { input: { method, ...(params === undefined ? {} : { params }) } };
      if (modern.interrupt({ result: { resultType: 'input_required', inputRequests, requestState: state } })) return;
      // The client has a question of this call to answer already: one at a time.
      this.#suspended.delete(state);
      clearTimeout(timer);
      refuse(new RpcError(CODES.serverError, 'the client has a question of this call to answer first'));
    });
  }

  /** The client's retry with `state`: its answer to the question goes to the server; the call it belongs to. */
  #resume(state: string, call: Call, responses: unknown): Forwarded {
    const suspended = this.#suspended.get(state);
    if (suspended === undefined) throw new RpcError(CODES.invalidParams, 'Invalid requestState: none such is waiting here (it expired, or was used)');
    if (!sameCaller(suspended.forwarded.caller, call.caller))
      throw new RpcError(CODES.invalidParams, 'Invalid requestState: it is not one given to this caller');
    this.#suspended.delete(state);
    clearTimeout(suspended.timer);
    const answer = isObject(responses) ? responses.input : undefined;
    if (answer === undefined) suspended.refuse(new RpcError(CODES.serverError, 'the client sent no answer for it'));
    else suspended.answer(answer);
    return suspended.forwarded;
  }

  /** A listen: acknowledged with what the gateway can give, then fed by deliver() until the client cancels it. */
  async #listen(call: Call, params: Json, init: Json): Promise<typeof LISTEN_ENDED> {
    const agreed = legacyAgreed(isObject(params.notifications) ? (params.notifications as ListenFilter) : {}, init.capabilities);
    const subscribed: string[] = [];
    for (const uri of agreed.resourceSubscriptions ?? []) if (await this.#subscribe(uri)) subscribed.push(uri);
    if (subscribed.length > 0) agreed.resourceSubscriptions = subscribed;
    else delete agreed.resourceSubscriptions;
    const ended = new Promise<void>((end) => this.#listens.set(call.key, { id: call.id, agreed, end }));
    const ack = { notifications: agreed, _meta: { [META_SUBSCRIPTION_ID]: call.id } };
    this.#host.emit({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: ack });
    await ended;
    for (const uri of subscribed) this.#unsubscribe(uri);
    return LISTEN_ENDED;
  }

  /** One more listen watches `uri`: subscribed at its server by the first (whose answer the others wait for). */
  async #subscribe(uri: string): Promise<boolean> {
    let entry = this.#subscriptions.get(uri);
    if (entry === undefined) {
      entry = { count: 0, taken: this.#host.uriRequest('resources/subscribe', uri) };
      this.#subscriptions.set(uri, entry);
    }
    entry.count++;
    if (await entry.taken) return true;
    this.#unsubscribe(uri, false);
    return false;
  }

  /** One listen fewer watches `uri`: unsubscribed at its server (when it was subscribed) once none does. */
  #unsubscribe(uri: string, taken = true): void {
    const entry = this.#subscriptions.get(uri);
    if (entry === undefined || --entry.count > 0) return;
    this.#subscriptions.delete(uri);
    if (taken) void this.#host.uriRequest('resources/unsubscribe', uri);
  }

  /** The client cancelled request `key`: a listen it opened ends. */
  cancelled(key: string): void {
    const listen = this.#listens.get(key);
    this.#listens.delete(key);
    listen?.end();
  }

  /**
   * A notification of the gateway's, to every listen that agreed to it (tagged with the listen's id); true when it
   * is of the kinds listens carry (list changes, resource updates), whether or not one wanted it.
   */
  deliver(msg: Json): boolean {
    const all = { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true };
    const carried = wantedBy(all, msg) || msg.method === 'notifications/resources/updated';
    for (const listen of this.#listens.values()) {
      if (!wantedBy(listen.agreed, msg)) continue;
      const params = isObject(msg.params) ? msg.params : {};
      const meta = isObject(params._meta) ? params._meta : {};
      this.#host.emit({ jsonrpc: '2.0', method: msg.method, params: { ...params, _meta: { ...meta, [META_SUBSCRIPTION_ID]: listen.id } } });
    }
    return carried;
  }

  /** The gateway closed: questions waiting are refused, listens end, no timer is left. */
  close(error: Error): void {
    for (const suspended of this.#suspended.values()) {
      clearTimeout(suspended.timer);
      suspended.refuse(error);
    }
    this.#suspended.clear();
    for (const key of [...this.#listens.keys()]) this.cancelled(key);
  }
}
