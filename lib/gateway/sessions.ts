/*
 * One gateway for many sessions of the initialize era (serve's Streamable HTTP, legacy SSE and socket sessions),
 * so that each server behind it runs once for everyone, whatever era they speak (the modern requests use the same
 * gateway). Each session talks to a GatewayView, a Channel of its own; what belongs to one session stays its own:
 *
 * - its requests' ids and progress tokens are made unique on the way in, and their answers and progress go back to
 *   it alone under its own; a cancellation names its own id;
 * - a server's request during one of its calls goes to it, and only when it declared it can answer (the gateway
 *   attributes each to its call, or refuses it; see RunningCalls); a log message of its call goes to it, at the
 *   level it asked for (each server is set to the most verbose level any session asked);
 * - its resource subscriptions: each URI is subscribed at its server once, whoever asks first, updates go to the
 *   sessions that subscribed to it, and the last to leave unsubscribes;
 * - list changes go to every session, each held until that session's `notifications/initialized`.
 *
 * A session that ends cancels its calls and leaves its subscriptions; the servers go on for the others. A session
 * whose client stops reading holds no server: once UNREAD_BYTES wait for it, its calls are cancelled.
 */
import { EventEmitter } from 'node:events';
import { ConnectionError, type ExitStatus } from '../client/errors.js';
import { idKey, isObject, isRequest, isResponse } from '../jsonrpc.js';
import type { Caller } from '../protocol/caller.js';
import { CODES } from '../protocol/codes.js';
import { INPUT_CAPABILITIES, RELAYED_CAPABILITIES } from '../protocol/modern.js';
import type { Gateway } from './gateway.js';

type Json = Record<string, unknown>;

/**
 * Bytes a session's client may leave unread before its calls are cancelled. The servers are everyone's, so a
 * client that stops reading cannot be allowed to hold them (as a session's own server is held): its calls go
 * instead. (serve's modern requests have the same bound.)
 */
const UNREAD_BYTES = 8 * 1024 * 1024;

/** The log levels of MCP, least severe first. */
const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** A session's request in flight: the view that sent it and the id it knows it by. */
interface Pending {
  view: GatewayView;
  id: unknown;
}

export class GatewaySessions {
  readonly #gateway: Gateway;
  readonly #views = new Set<GatewayView>();
  /** The sessions' requests in flight, by the id the gateway knows. */
  readonly #pending = new Map<string, Pending>();
  /** The sessions' progress tokens, by the token the gateway knows. */
  readonly #tokens = new Map<string, { view: GatewayView; token: unknown }>();
  /** Each resource subscribed at its server, and the sessions that want it. */
  readonly #subscriptions = new Map<string, Set<GatewayView>>();
  #next = 1;

  constructor(gateway: Gateway) {
    this.#gateway = gateway;
    gateway.on('message', (msg: unknown, related?: unknown) => this.#fromGateway(msg, related));
    gateway.on('close', () => {
      for (const view of [...this.#views]) view.ended(gateway.endError('the gateway'));
    });
  }

  /** The sessions open now. */
  get size(): number {
    return this.#views.size;
  }

  /** A session's channel to the gateway: `caller`, when signed in, is who sends its messages. */
  open(name: string, caller: Caller | undefined): GatewayView {
    // Every server is told what any session may answer; each question goes only to a session that declared it.
    void this.#gateway.start(RELAYED_CAPABILITIES).catch(() => undefined);
    const view = new GatewayView(name, this, caller);
    this.#views.add(view);
    return view;
  }

  /** A message of `view`'s session. */
  send(view: GatewayView, msg: unknown, caller: Caller | undefined): Promise<void> {
    if (isRequest(msg)) return this.#request(view, msg as unknown as Json & { id: unknown; method: string }, caller);
    if (isResponse(msg)) return this.#gateway.send(msg, caller);
    if (!isObject(msg) || typeof msg.method !== 'string') return Promise.resolve();
    const params = isObject(msg.params) ? msg.params : {};
    if (msg.method === 'notifications/initialized') view.initialized();
    if (msg.method === 'notifications/cancelled') {
      const key = this.#keyOf(view, params.requestId);
      if (!this.#pending.has(key)) return Promise.resolve();
      return this.#gateway.send({ ...msg, params: { ...params, requestId: key } }, caller);
    }
    return this.#gateway.send(msg, caller);
  }

  async #request(view: GatewayView, msg: Json & { id: unknown; method: string }, caller: Caller | undefined): Promise<void> {
    const params = isObject(msg.params) ? msg.params : {};
    if (msg.method === 'initialize') view.capabilities = isObject(params.capabilities) ? params.capabilities : {};
    if (msg.method === 'logging/setLevel' && typeof params.level === 'string') {
      view.level = params.level;
      return this.#forward(view, msg, { ...params, level: this.#mostVerbose() }, caller);
    }
    const uri = typeof params.uri === 'string' ? params.uri : undefined;
    if (uri !== undefined && msg.method === 'resources/subscribe') {
      const wanting = this.#subscriptions.get(uri);
      if (wanting !== undefined && wanting.size > 0) {
        wanting.add(view);
        return view.deliver({ jsonrpc: '2.0', id: msg.id, result: {} });
      }
      return this.#forward(view, msg, params, caller, (answer) => {
        if (isObject(answer.result)) this.#subscriptions.set(uri, (this.#subscriptions.get(uri) ?? new Set()).add(view));
      });
    }
    if (uri !== undefined && msg.method === 'resources/unsubscribe') {
      if (!this.#leave(view, uri)) return view.deliver({ jsonrpc: '2.0', id: msg.id, result: {} });
    }
    return this.#forward(view, msg, params, caller);
  }

  /** Sends a session's request on under an id of its own (and a progress token of its own), its answer to come back. */
  #forward(view: GatewayView, msg: Json, params: Json, caller: Caller | undefined, onAnswer?: (answer: Json) => void): Promise<void> {
    const key = this.#keyOf(view, msg.id);
    this.#pending.set(key, { view, id: msg.id });
    if (onAnswer !== undefined) view.onAnswer.set(key, onAnswer);
    let out = params;
    if (isObject(params._meta) && params._meta.progressToken !== undefined) {
      const token = `${key}/progress`;
      this.#tokens.set(token, { view, token: params._meta.progressToken });
      out = { ...params, _meta: { ...params._meta, progressToken: token } };
    }
    view.inFlight.add(key);
    return this.#gateway.send({ ...msg, id: key, params: out }, caller, view.name);
  }

  /** The id the gateway knows a session's request by. */
  #keyOf(view: GatewayView, id: unknown): string {
    return `mcp-frame-session-${view.number}-${idKey(id)}`;
  }

  #fromGateway(msg: unknown, related?: unknown): void {
    if (!isObject(msg)) return;
    if (isResponse(msg)) return this.#answered(msg as Json);
    if (isRequest(msg)) return this.#question(msg as Json, related);
    const params = isObject(msg.params) ? msg.params : {};
    switch (msg.method) {
      case 'notifications/progress': {
        const given = typeof params.progressToken === 'string' ? this.#tokens.get(params.progressToken) : undefined;
        void given?.view.deliver({ ...msg, params: { ...params, progressToken: given.token } });
        return;
      }
      case 'notifications/message': {
        const pending = typeof related === 'string' ? this.#pending.get(related) : undefined;
        return pending?.view.log(msg, pending.id);
      }
      case 'notifications/resources/updated': {
        for (const view of this.#subscriptions.get(String(params.uri)) ?? []) void view.deliver(msg);
        return;
      }
      default:
        if (typeof msg.method === 'string' && msg.method.endsWith('/list_changed')) for (const view of this.#views) view.listChanged(msg);
    }
  }

  /** The gateway's answer to a session's request, under the session's own id. */
  #answered(msg: Json): void {
    const key = typeof msg.id === 'string' ? msg.id : undefined;
    const pending = key === undefined ? undefined : this.#pending.get(key);
    if (pending === undefined) return;
    this.#pending.delete(key!);
    this.#tokens.delete(`${key}/progress`);
    pending.view.inFlight.delete(key!);
    pending.view.onAnswer.get(key!)?.(msg);
    pending.view.onAnswer.delete(key!);
    void pending.view.deliver({ ...msg, id: pending.id });
  }

  /**
   * A server's request, passed on by the gateway for the call it belongs to (`related`): to that call's session,
   * when it declared it can answer; otherwise the server hears no at once.
   */
  #question(msg: Json, related: unknown): void {
    const pending = typeof related === 'string' ? this.#pending.get(related) : undefined;
    if (pending === undefined) return;
    const capability = INPUT_CAPABILITIES[String(msg.method)];
    if (capability !== undefined && pending.view.capabilities[capability] === undefined) {
      const error = { code: CODES.methodNotFound, message: `the client did not declare ${capability}` };
      void this.#gateway.send({ jsonrpc: '2.0', id: msg.id, error }).catch(() => undefined);
      return;
    }
    void pending.view.deliver(msg, pending.id);
  }

  /** The most verbose log level any session asked for. */
  #mostVerbose(): string {
    let most = LEVELS.length - 1;
    for (const view of this.#views) if (view.level !== undefined) most = Math.min(most, Math.max(0, LEVELS.indexOf(view.level)));
    return LEVELS[most]!;
  }

  /** `view` no longer wants `uri`; true when no session does now (the server is to be told). */
  #leave(view: GatewayView, uri: string): boolean {
    const wanting = this.#subscriptions.get(uri);
    if (wanting === undefined || !wanting.delete(view)) return false;
    if (wanting.size > 0) return false;
    this.#subscriptions.delete(uri);
    return true;
  }

  /** Cancels `view`'s calls at their servers (`reason`), answering each with an error when `answer` is given. */
  cancelAll(view: GatewayView, reason: string, answer?: string): void {
    for (const key of view.inFlight) {
      const pending = this.#pending.get(key);
      this.#pending.delete(key);
      this.#tokens.delete(`${key}/progress`);
      const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: key, reason } };
      void this.#gateway.send(cancel).catch(() => undefined);
      if (answer !== undefined && pending !== undefined)
        void view.deliver({ jsonrpc: '2.0', id: pending.id, error: { code: CODES.serverError, message: answer } });
    }
    view.inFlight.clear();
  }

  /** A session ended: its calls are cancelled at their servers, its subscriptions left. */
  closed(view: GatewayView): void {
    if (!this.#views.delete(view)) return;
    this.cancelAll(view, 'the session ended');
    for (const [uri] of this.#subscriptions) {
      if (!this.#leave(view, uri)) continue;
      const unsubscribe = { jsonrpc: '2.0', id: `mcp-frame-unsubscribe-${this.#next++}`, method: 'resources/unsubscribe', params: { uri } };
      void this.#gateway.send(unsubscribe).catch(() => undefined);
    }
  }
}

/** One session's channel to a shared gateway (see GatewaySessions). */
export class GatewayView extends EventEmitter {
  static #count = 0;
  readonly name: string;
  /** In process: the gateway is shared, and started by the first session. */
  readonly started: Promise<void> = Promise.resolve();
  readonly pid = undefined;
  readonly number = ++GatewayView.#count;
  /** The client capabilities the session declared at initialize. */
  capabilities: Json = {};
  /** The log level the session asked for (logging/setLevel); until it asks, every level. */
  level: string | undefined;
  /** The ids (the gateway's) of its requests in flight. */
  readonly inFlight = new Set<string>();
  /** What to do with the answer to some of them (a subscription). */
  readonly onAnswer = new Map<string, (answer: Json) => void>();
  readonly #sessions: GatewaySessions;
  readonly #caller: Caller | undefined;
  #initialized = false;
  readonly #held = new Set<string>();
  #holds = 0;
  /** Bytes given to the session while its client did not read. */
  #unread = 0;
  #ended: ConnectionError | undefined;

  constructor(name: string, sessions: GatewaySessions, caller: Caller | undefined) {
    super();
    this.name = name;
    this.#sessions = sessions;
    this.#caller = caller;
  }

  /** A message of the session's; `caller` when not the view's own. */
  send(msg: unknown, caller?: Caller): Promise<void> {
    if (this.#ended !== undefined) return Promise.reject(this.endError('cannot send'));
    return this.#sessions.send(this, msg, caller ?? this.#caller);
  }

  endError(what: string): ConnectionError {
    return this.#ended ?? new ConnectionError('CLOSED', `${what}: the session's view of the gateway "${this.name}" is closed`);
  }

  /**
   * The session's client does not read: the servers are shared, so none is held; what the session gets meanwhile
   * is counted, and past UNREAD_BYTES its calls are cancelled.
   */
  holdInput(): () => void {
    this.#holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds === 0) this.#unread = 0;
    };
  }

  close(): Promise<ExitStatus> {
    this.ended(new ConnectionError('CLOSED', `the session's view of the gateway "${this.name}" is closed`));
    return Promise.resolve({ code: 0, signal: null });
  }

  /** The session ends (closed, or the gateway is gone). */
  ended(error: ConnectionError): void {
    if (this.#ended !== undefined) return;
    this.#ended = error;
    this.#sessions.closed(this);
    this.emit('end');
    this.emit('close', { code: 0, signal: null } satisfies ExitStatus);
  }

  /** A message for the session; `related`: the session's id of the request it belongs to, when known. */
  deliver(msg: Json, related?: unknown): Promise<void> {
    if (this.#ended !== undefined) return Promise.resolve();
    this.emit('message', msg, related);
    if (this.#holds > 0 && 'method' in msg) {
      this.#unread += JSON.stringify(msg).length;
      if (this.#unread > UNREAD_BYTES) {
        this.#unread = 0;
        const why = `its client left more than ${UNREAD_BYTES} bytes unread`;
        this.#sessions.cancelAll(this, why, `cancelled: ${why}`);
      }
    }
    return Promise.resolve();
  }

  /** A log message of one of its calls, when at or above the level it asked for. */
  log(msg: Json, related: unknown): void {
    const level = isObject(msg.params) ? String(msg.params.level) : '';
    if (this.level === undefined || LEVELS.indexOf(level) >= LEVELS.indexOf(this.level)) void this.deliver(msg, related);
  }

  /** The session said it is initialized: the list changes held till then go to it. */
  initialized(): void {
    this.#initialized = true;
    for (const method of this.#held) void this.deliver({ jsonrpc: '2.0', method });
    this.#held.clear();
  }

  /** A list change: to the session once it is initialized. */
  listChanged(msg: Json): void {
    if (this.#initialized) void this.deliver(msg);
    else this.#held.add(String(msg.method));
  }
}
