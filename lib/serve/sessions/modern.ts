/*
 * Modern (2026-07-28) requests through `serve`: they carry no session, so they all go to one shared child
 * process. Each gets a serve-wide id (and progress token) on the way in, so that clients' ids cannot collide,
 * and its own response: JSON when the answer comes first (with the status the spec gives a modern error), an
 * event stream when a notification comes before it. A client that closes its response cancels the request.
 *
 * The child's era is found once, by serve's own well-formed `server/discover` (never a client's request, whose
 * envelope may be broken): a DiscoverResult says modern; method not found, an unsupported-version error that
 * lists no modern revision, or silence says legacy; any other answer is no verdict (the request that started the
 * child gets 502, and the next one asks again).
 *
 * A gateway speaks both eras itself (gateway/modern.ts): it answers the probe as a modern server and is never
 * translated. A child that speaks only the legacy era is translated: serve opens one legacy session with it (initialize,
 * declaring elicitation, sampling and roots, which it can relay), answers `server/discover` from that session's
 * initialize result, sends requests without the modern metadata, and turns a request the child sends during a
 * call into an `input_required` result whose retry (with `requestState`) answers the child and completes the
 * call. Client capabilities are per request in the modern era: a question the calling client did not declare
 * it can answer gets that client -32021 (MissingRequiredClientCapability) and the call is cancelled; but roots,
 * which legacy servers ask for at moments of their own rather than for a call, are refused to the child as a
 * legacy client without them refuses them, and the call goes on. The methods
 * the revision removed (initialize, ping, logging/setLevel, resources/subscribe and unsubscribe) are answered
 * 404 / -32601, and `subscriptions/listen` is served from the session's list-changed notifications and
 * resources/subscribe. The session is shared by every modern client: a server that keeps per-client state
 * across calls keeps it for all of them, and its log level is not per request.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { legacyAgreed, type ListenFilter, wantedBy } from '../../protocol/listen.js';
import { LATEST_LEGACY_PROTOCOL_VERSION } from '../../protocol/versions.js';
import {
  INPUT_CAPABILITIES,
  isModernError,
  MODERN_ERRORS,
  META_CLIENT_CAPABILITIES,
  META_CLIENT_INFO,
  META_LOG_LEVEL,
  META_PROTOCOL_VERSION,
  META_SUBSCRIPTION_ID,
  MODERN_PROTOCOL_VERSIONS,
  discoverFrom,
  modernResult,
  RELAYED_CAPABILITIES,
  REMOVED_METHODS,
} from '../../protocol/modern.js';

import { isObject, isRequest, isResponse, type JsonRpcRequest, rpcError } from '../../jsonrpc.js';
import { VERSION } from '../../version.js';
import { Gateway, SERVE_ITSELF } from '../../gateway/gateway.js';
import { ParamCheck } from './param-check.js';
import { CANCELLED_RUNS_MS } from '../../gateway/running.js';
import { type Caller, sameCaller } from '../../protocol/caller.js';
import { CallerGateways } from './callers.js';
import { MODERN_LABEL, pidNote, type ServedChild } from './children.js';
import { type ServeContext, sendAs } from './context.js';
import { EVENT_STREAM_HEADERS, keepAlive, writeEvent } from './event-stream.js';
import { whenGone } from '../../protocol/response.js';
import { CODES } from '../../protocol/codes.js';

/**
 * Bytes a modern request's response may hold unread before the request is cancelled. The child is shared by
 * every client, so one that stops reading cannot be allowed to stop it (as a session's own child is stopped):
 * its request goes instead.
 */
const UNREAD_BYTES = 8 * 1024 * 1024;

/** How long a `server/discover` may go unanswered before serve says the server does not speak it. */
const DISCOVER_TIMEOUT_MS = 2000;

/** How long a legacy child's question waits for the modern client to come back with the answer. */
const INPUT_WAIT_MS = 5 * 60_000;

/** A legacy child's question during a call, turned into input_required: what the client's retry resumes. */
interface Suspended {
  /** The child's request id (the serve-wide id of the call). */
  n: number;
  /** The id of the child's own request, to answer. */
  askId: unknown;
  key: string;
  timer: NodeJS.Timeout;
  /** Who made the call: only they may answer. */
  caller: Caller | undefined;
}

interface Exchange {
  id: unknown;
  method: string;
  res: ServerResponse;
  token: unknown;
  streaming: boolean;
  timer: NodeJS.Timeout | undefined;
  /** The request asked for log messages (its `_meta` named a log level). */
  logs: boolean;
  /** The client capabilities the request declared. */
  capabilities: Record<string, unknown>;
  /** For a listen served from a legacy child's notifications: what was agreed. */
  agreed?: ListenFilter;
  /** Who sent it, when signed in (a gateway filters for them). */
  caller?: Caller | undefined;
  /** The token the child was given in place of the client's progress token (random: no server guesses another's). */
  upToken?: string;
}

/** An exchange with no progress token and no logs asked: a retry's, or a listen's. */
function quietExchange(msg: JsonRpcRequest, res: ServerResponse, capabilities: Record<string, unknown>): Exchange {
  return { id: msg.id, method: msg.method, res, token: undefined, streaming: false, timer: undefined, logs: false, capabilities };
}

/**
 * The era of the child for modern requests, found with serve's own server/discover; a legacy child is given one
 * session (initialize) for every modern client, declaring what serve relays, and its initialize result is `init`.
 */
async function openEra(
  child: ServedChild,
  ask: (method: string, params: unknown, timeoutMs: number) => Promise<Record<string, unknown> | undefined>,
): Promise<{ era: 'modern' | 'legacy'; init: Record<string, unknown> | undefined }> {
  const meta = {
    [META_PROTOCOL_VERSION]: MODERN_PROTOCOL_VERSIONS[0],
    [META_CLIENT_CAPABILITIES]: {},
    [META_CLIENT_INFO]: { name: 'mcp-frame serve', version: VERSION },
  };
  const probe = await ask('server/discover', { _meta: meta }, DISCOVER_TIMEOUT_MS);
  const verdict = eraOf(probe);
  if (verdict === undefined) {
    throw new Error(
      `the server answered server/discover neither as a modern server nor as a legacy one (${JSON.stringify(probe?.error ?? probe?.result).slice(0, 160)}); the next request asks again`,
    );
  }
  if (verdict === 'modern') return { era: 'modern', init: undefined };
  const clientInfo = { name: 'mcp-frame serve', version: VERSION };
  const init = await ask('initialize', { protocolVersion: LATEST_LEGACY_PROTOCOL_VERSION, capabilities: RELAYED_CAPABILITIES, clientInfo }, 30_000);
  if (!isObject(init?.result)) throw new Error(`the server refused initialize: ${JSON.stringify(init?.error ?? 'no answer').slice(0, 200)}`);
  await child.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { era: 'legacy', init: init.result };
}

/**
 * The HTTP status a modern error answer goes out with (the spec's: 400 for version, header and capability errors
 * and for a malformed envelope, 404 for an unknown method). The child's -32602 is a malformed envelope when its
 * data names the envelope (as the MCP SDK's does); other -32602s (a resource not found) are answers, 200.
 */
function statusOf(msg: Record<string, unknown>): number {
  const error = isObject(msg.error) ? msg.error : undefined;
  if (error?.code === CODES.methodNotFound) return 404;
  if (isModernError(error?.code)) return 400;
  if (error?.code === CODES.invalidParams && isObject(error.data) && error.data.envelope !== undefined) return 400;
  return 200;
}

export class ModernHub {
  readonly #ctx: ServeContext;
  #child: ServedChild | undefined;
  readonly #exchanges = new Map<number, Exchange>();
  readonly #tokens = new Map<string, number>();
  /** Requests the child may still run though nobody waits for their answer (see CANCELLED_RUNS_MS), by id. */
  readonly #unfinished = new Map<number, { timer: NodeJS.Timeout; logs: boolean; caller: Caller | undefined }>();
  #next = 1;
  #droppedCount = 0;
  /** The child's era, found when it starts: modern (requests pass through), or legacy (translated). */
  #legacy: Record<string, unknown> | undefined;
  /** Answers serve waits for itself (the probe, initialize), by id. */
  readonly #own = new Map<string, (msg: Record<string, unknown>) => void>();
  readonly #suspended = new Map<string, Suspended>();
  /** Each tool's x-mcp-header declarations, for the Mcp-Param-* headers of a call (see ParamCheck). */
  readonly #params: ParamCheck;

  constructor(ctx: ServeContext) {
    this.#ctx = ctx;
    this.#params = new ParamCheck(
      (child, method, params, timeoutMs) => this.#ask(child, method, params, timeoutMs),
      () => this.#legacy !== undefined,
      ctx.log,
    );
  }

  /** Requests in flight. */
  get pending(): number {
    return this.#exchanges.size;
  }

  /** Messages of the shared child (and of a gateway's servers) that could not be attributed to a request in flight, and were dropped. */
  get dropped(): number {
    return this.#droppedCount + ((this.#child as { dropped?: number } | undefined)?.dropped ?? 0);
  }

  /** Forwards one modern request; its answer (and notifications) go out on `res`. */
  async handle(msg: JsonRpcRequest, res: ServerResponse, headers: IncomingHttpHeaders = {}, caller?: Caller): Promise<void> {
    const child = await this.#started();
    // The child reads the body but not the headers: the Mcp-Param-* headers are checked against it here.
    const mismatch = msg.method === 'tools/call' ? await this.#params.mismatch(child, msg, headers) : undefined;
    if (mismatch !== undefined) {
      res
        .writeHead(400, { 'Content-Type': 'application/json' })
        .end(JSON.stringify(rpcError(msg.id, MODERN_ERRORS.headerMismatch, `Header mismatch: ${mismatch}`)));
      return;
    }
    const legacy = this.#legacy;
    if (legacy !== undefined && msg.method === 'server/discover') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: discoverFrom(legacy) }));
      return;
    }
    if (legacy !== undefined && REMOVED_METHODS.has(msg.method)) {
      res
        .writeHead(404, { 'Content-Type': 'application/json' })
        .end(JSON.stringify(rpcError(msg.id, CODES.methodNotFound, `Method not found: ${msg.method} is not part of the 2026-07-28 revision`)));
      return;
    }
    const params = isObject(msg.params) ? { ...msg.params } : undefined;
    if (legacy !== undefined && params !== undefined && typeof params.requestState === 'string' && this.#suspended.has(params.requestState)) {
      return this.#resume(child, msg, params, res, caller);
    }
    const meta = params !== undefined && isObject(params._meta) ? { ...params._meta } : undefined;
    const capabilities = isObject(meta?.[META_CLIENT_CAPABILITIES]) ? (meta[META_CLIENT_CAPABILITIES] as Record<string, unknown>) : {};
    if (legacy !== undefined && msg.method === 'subscriptions/listen') return this.#legacyListen(child, msg, params ?? {}, res, legacy, capabilities);
    const n = this.#next++;
    // A legacy child knows nothing of the modern metadata: it is left out.
    if (legacy !== undefined && meta !== undefined) {
      for (const key of [META_PROTOCOL_VERSION, META_CLIENT_INFO, META_CLIENT_CAPABILITIES, META_LOG_LEVEL]) delete meta[key];
      params!._meta = meta;
      if (Object.keys(meta).length === 0) delete params!._meta;
    }
    const exchange: Exchange = {
      id: msg.id,
      method: msg.method,
      res,
      token: meta?.progressToken,
      streaming: false,
      timer: undefined,
      logs: isObject(msg.params) && isObject(msg.params._meta) && msg.params._meta[META_LOG_LEVEL] !== undefined,
      capabilities,
      caller,
    };
    if (meta !== undefined && meta.progressToken !== undefined) {
      exchange.upToken = `mcp-frame-${randomUUID()}`;
      meta.progressToken = exchange.upToken;
      params!._meta = meta;
      this.#tokens.set(exchange.upToken, n);
    }
    this.#exchanges.set(n, exchange);
    this.#send(child, n, exchange, msg, params);
  }

  /** Sends request `n` to the child, its exchange's response watched for the client leaving. */
  #send(child: ServedChild, n: number, exchange: Exchange, msg: JsonRpcRequest, params: Record<string, unknown> | undefined): void {
    if (msg.method === 'server/discover') {
      exchange.timer = setTimeout(
        () => this.#answer(n, rpcError(n, CODES.methodNotFound, 'the server behind serve does not answer server/discover')),
        DISCOVER_TIMEOUT_MS,
      );
    }
    // Closing the response is the cancellation of a modern request; the child hears it the stdio way.
    whenGone(exchange.res, () => {
      // The exchange may have been answered (input_required) and another one now waits for request n.
      if (this.#exchanges.get(n) !== exchange || !this.#forget(n, true)) return;
      child
        .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: n, reason: 'the client closed its response' } })
        .catch(() => undefined);
    });
    const forwarded = { ...msg, id: n, ...(params === undefined ? {} : { params }) };
    if (params === undefined) delete (forwarded as { params?: unknown }).params;
    sendAs(this.#ctx, child, forwarded, exchange.caller).catch((err: Error) => this.#answer(n, rpcError(n, CODES.serverError, err.message)));
  }

  /**
   * A client's retry of a call whose legacy child asked a question: the answer from `inputResponses` goes to
   * the child, and the call's result, when it comes, to this response.
   */
  #resume(child: ServedChild, msg: JsonRpcRequest, params: Record<string, unknown>, res: ServerResponse, caller: Caller | undefined): void {
    const state = params.requestState as string;
    const suspended = this.#suspended.get(state)!;
    if (!sameCaller(suspended.caller, caller)) {
      res
        .writeHead(400, { 'Content-Type': 'application/json' })
        .end(JSON.stringify(rpcError(msg.id, CODES.invalidParams, 'Invalid requestState: it is not one given to this caller')));
      return;
    }
    this.#suspended.delete(state);
    clearTimeout(suspended.timer);
    const meta = isObject(params._meta) ? params._meta : {};
    const capabilities = isObject(meta[META_CLIENT_CAPABILITIES]) ? (meta[META_CLIENT_CAPABILITIES] as Record<string, unknown>) : {};
    const exchange: Exchange = { ...quietExchange(msg, res, capabilities), caller };
    this.#exchanges.set(suspended.n, exchange);
    whenGone(res, () => {
      if (this.#exchanges.get(suspended.n) !== exchange || !this.#forget(suspended.n, true)) return;
      child
        .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: suspended.n, reason: 'the client closed its response' } })
        .catch(() => undefined);
    });
    const responses = isObject(params.inputResponses) ? params.inputResponses : {};
    const answer = responses[suspended.key];
    const reply =
      answer === undefined
        ? rpcError(suspended.askId, CODES.serverError, 'the client sent no answer for it')
        : { jsonrpc: '2.0', id: suspended.askId, result: answer };
    sendAs(this.#ctx, child, reply, caller).catch((err: Error) => this.#answer(suspended.n, rpcError(suspended.n, CODES.serverError, err.message)));
  }

  async close(): Promise<void> {
    for (const suspended of this.#suspended.values()) clearTimeout(suspended.timer);
    this.#suspended.clear();
    for (const { timer } of this.#unfinished.values()) clearTimeout(timer);
    this.#unfinished.clear();
    const child = this.#child;
    this.#child = undefined;
    await child?.close();
  }

  #starting: Promise<ServedChild> | undefined;

  /** The shared child, started at the first modern request and its era found (see the top of this file). */
  #started(): Promise<ServedChild> {
    if (this.#child !== undefined && this.#era !== undefined && this.#starting === undefined) return Promise.resolve(this.#child);
    this.#starting ??= this.#start().finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  /** Found at the first modern request, by serve's own probe; undefined until a verdict. */
  #era: 'modern' | 'legacy' | undefined;

  async #start(): Promise<ServedChild> {
    const child = await this.#spawn();
    if (this.#era !== undefined) return child;
    const found = await openEra(child, (method, params, timeoutMs) => this.#ask(child, method, params, timeoutMs));
    this.#era = found.era;
    this.#legacy = found.init;
    if (found.init !== undefined)
      this.#ctx.log.info('server.translating', 'the server for modern requests speaks only the initialize era: translating', { label: MODERN_LABEL });
    return child;
  }

  /**
   * A listen on a translated legacy child: acknowledged at once with what the child can give (its declared
   * list changes; resource updates through resources/subscribe), then fed from its notifications.
   */
  async #legacyListen(
    child: ServedChild,
    msg: JsonRpcRequest,
    params: Record<string, unknown>,
    res: ServerResponse,
    init: Record<string, unknown>,
    capabilities: Record<string, unknown>,
  ): Promise<void> {
    const agreed = legacyAgreed(isObject(params.notifications) ? (params.notifications as ListenFilter) : {}, init.capabilities);
    const subscribed: string[] = [];
    for (const uri of agreed.resourceSubscriptions ?? []) {
      if (!this.#watching(uri)) {
        const answer = await this.#ask(child, 'resources/subscribe', { uri }, 10_000);
        if (!isObject(answer?.result)) continue;
      }
      subscribed.push(uri);
    }
    if (subscribed.length > 0) agreed.resourceSubscriptions = subscribed;
    else delete agreed.resourceSubscriptions;
    const n = this.#next++;
    const exchange: Exchange = { ...quietExchange(msg, res, capabilities), agreed };
    this.#exchanges.set(n, exchange);
    whenGone(res, () => {
      this.#forget(n);
      for (const uri of subscribed) {
        if (!this.#watching(uri)) void this.#ask(child, 'resources/unsubscribe', { uri }, 10_000);
      }
    });
    const ack = { notifications: agreed, _meta: { [META_SUBSCRIPTION_ID]: msg.id } };
    writeEvent(
      this.#stream(exchange),
      `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: ack })}\n\n`,
    );
  }

  /** True while a listen on the translated child has `uri` among its resource subscriptions. */
  #watching(uri: string): boolean {
    for (const exchange of this.#exchanges.values()) if (exchange.agreed?.resourceSubscriptions?.includes(uri) === true) return true;
    return false;
  }

  /** A request of serve's own to the child, and its answer (undefined after `timeoutMs`). */
  #ask(child: ServedChild, method: string, params: unknown, timeoutMs: number): Promise<Record<string, unknown> | undefined> {
    const id = `mcp-frame-${method}-${randomUUID()}`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#own.delete(id);
        resolve(undefined);
      }, timeoutMs);
      this.#own.set(id, (msg) => {
        clearTimeout(timer);
        this.#own.delete(id);
        resolve(msg);
      });
      sendAs(this.#ctx, child, { jsonrpc: '2.0', id, method, params }, SERVE_ITSELF).catch(() => {
        clearTimeout(timer);
        this.#own.delete(id);
        resolve(undefined);
      });
    });
  }

  async #spawn(): Promise<ServedChild> {
    if (this.#child !== undefined) return this.#child;
    const child = this.#ctx.children.start(MODERN_LABEL, this.#ctx.log.child({ label: MODERN_LABEL }, MODERN_LABEL));
    this.#child = child;
    child.on('message', (msg: unknown, related?: unknown) => this.#fromServer(msg, related));
    child.on('close', () => {
      if (this.#child === child) this.#child = undefined;
      const why = child.endError('the server is gone').message;
      for (const n of [...this.#exchanges.keys()]) this.#answer(n, rpcError(n, CODES.serverError, why));
      if (!this.#ctx.lifecycle.closing)
        this.#ctx.log.warn('server.ended', `the server for modern requests ended: ${why}`, { label: MODERN_LABEL, why });
    });
    try {
      await child.started;
    } catch (err) {
      this.#child = undefined;
      throw err;
    }
    this.#ctx.log.info('server.started', `the server for modern requests started${pidNote(child)}`, {
      label: MODERN_LABEL,
      ...(child.pid === undefined ? {} : { pid: child.pid }),
    });
    return child;
  }

  /** `related`: a gateway's word on which request a log message belongs to (see Gateway). */
  #fromServer(msg: unknown, related?: unknown): void {
    if (isObject(msg) && msg.method === 'notifications/tools/list_changed') this.#params.listChanged();
    // The gateway is shared with the sessions of the initialize era: what is theirs is not this hub's to drop.
    if ((this.#child instanceof Gateway || this.#child instanceof CallerGateways) && !this.#mine(msg, related)) return;
    if (isResponse(msg)) {
      const own = typeof msg.id === 'string' ? this.#own.get(msg.id) : undefined;
      if (own !== undefined) return own(msg as unknown as Record<string, unknown>);
      this.#finished(msg.id);
      return this.#answer(msg.id as number, msg as unknown as Record<string, unknown>);
    }
    if (isObject(msg) && isRequest(msg) && this.#legacy !== undefined) return this.#question(msg as unknown as JsonRpcRequest);
    if (!isObject(msg) || isRequest(msg)) return this.#dropped(msg, 'the modern era has no requests from the server');
    const params = isObject(msg.params) ? msg.params : {};
    if (this.#legacy !== undefined && this.#toListens(msg)) return;
    const found = this.#owner(msg.method, params, related);
    if (found === undefined) return this.#dropped(msg, 'it names no request in flight');
    const [exchange, out] = found;
    const res = this.#stream(exchange);
    writeEvent(res, `event: message\ndata: ${JSON.stringify(out)}\n\n`);
    if (res.writableLength > Math.max(UNREAD_BYTES, this.#ctx.maxMessageBytes)) {
      this.#ctx.log.warn('request.unread', `cancelled a modern request: its client left ${res.writableLength} bytes of its response unread`, {
        bytes: res.writableLength,
      });
      res.destroy();
    }
  }

  /**
   * Whether a message of the shared gateway is this hub's: an answer to one of its requests, or a notification its
   * own progress token, listen or call (`related`) names. (The gateway drops what is no one's, and counts it.)
   */
  #mine(msg: unknown, related: unknown): boolean {
    if (!isObject(msg)) return false;
    if (isResponse(msg)) return typeof msg.id === 'number' || (typeof msg.id === 'string' && this.#own.has(msg.id));
    if (isRequest(msg)) return false;
    const params = isObject(msg.params) ? msg.params : {};
    if (params.progressToken !== undefined) return this.#tokens.has(String(params.progressToken));
    if (isObject(params._meta) && params._meta[META_SUBSCRIPTION_ID] !== undefined) return typeof params._meta[META_SUBSCRIPTION_ID] === 'number';
    return typeof related === 'number';
  }

  /** A translated child's list change or resource update, to every listen that agreed to it; false when none did. */
  #toListens(msg: Record<string, unknown>): boolean {
    let sent = false;
    for (const exchange of this.#exchanges.values()) {
      if (exchange.agreed === undefined || !wantedBy(exchange.agreed, msg)) continue;
      const params = isObject(msg.params) ? msg.params : {};
      const meta = isObject(params._meta) ? params._meta : {};
      const out = { jsonrpc: '2.0', method: msg.method, params: { ...params, _meta: { ...meta, [META_SUBSCRIPTION_ID]: exchange.id } } };
      writeEvent(this.#stream(exchange), `event: message\ndata: ${JSON.stringify(out)}\n\n`);
      sent = true;
    }
    return sent;
  }

  /**
   * The request a notification of the shared child belongs to, and the notification as its client gets it. The
   * child is shared, so only these say whose it is: a progress token (the client's own put back), a listen
   * stream's subscription id (the client's request id put back), or for a log message the request a gateway names
   * (`related`), else the one request that may be logging: of a legacy child (whose logs are its session's) the
   * only request running there at all, of a modern one (which logs only for requests that asked, `logLevel`) the
   * only one running that asked; either way one that asked, and none whose client left may still be running.
   * Anything else (a list change outside a listen) could be any client's, and is not passed on.
   */
  #owner(method: unknown, params: Record<string, unknown>, related?: unknown): [Exchange, Record<string, unknown>] | undefined {
    const message = (p: Record<string, unknown>): Record<string, unknown> => ({ jsonrpc: '2.0', method, params: p });
    if (params.progressToken !== undefined) {
      const n = this.#tokens.get(String(params.progressToken));
      const exchange = n === undefined ? undefined : this.#exchanges.get(n);
      return exchange === undefined ? undefined : [exchange, message({ ...params, progressToken: exchange.token })];
    }
    const meta = isObject(params._meta) ? params._meta : undefined;
    const subscription = meta?.[META_SUBSCRIPTION_ID];
    if (typeof subscription === 'number') {
      const exchange = this.#exchanges.get(subscription);
      if (exchange?.method !== 'subscriptions/listen') return undefined;
      return [exchange, message({ ...params, _meta: { ...meta, [META_SUBSCRIPTION_ID]: exchange.id } })];
    }
    if (method !== 'notifications/message') return undefined;
    const n = related !== undefined ? (related as number) : this.#onlyRunning((e) => this.#legacy !== undefined || e.logs);
    const only = n === undefined ? undefined : this.#exchanges.get(n);
    return only?.logs === true ? [only, message(params)] : undefined;
  }

  /**
   * The id of the one request waited for that may be running at the child among those `counts` (listens never:
   * they run nothing), when it is the only one, and every request that may be running there (those suspended on a
   * question and those whose client left count too) is its caller's: never a pick between callers.
   */
  #onlyRunning(counts: (e: { logs: boolean }) => boolean): number | undefined {
    let only: [number, Exchange] | undefined;
    for (const entry of this.#exchanges) {
      const exchange = entry[1];
      if (exchange.method === 'subscriptions/listen' || exchange.timer !== undefined || !counts(exchange)) continue;
      if (only !== undefined) return undefined;
      only = entry;
    }
    if (only === undefined) return undefined;
    const others = [...this.#suspended.values(), ...[...this.#unfinished.values()].filter((u) => counts(u))];
    return others.every((o) => sameCaller(o.caller, only[1].caller)) ? only[0] : undefined;
  }

  /**
   * A legacy child asks the client something (elicitation, sampling, roots) during a call: the one request that
   * may be running there (a listen runs nothing; see #onlyRunning) is the one asking: its client gets an
   * input_required result, and its retry answers. Otherwise nobody can tell whose question it is, and the child
   * is told so at once: never a guess between callers. (A gateway is never translated: it makes input_required
   * results itself.)
   */
  #question(ask: JsonRpcRequest): void {
    const child = this.#child;
    if (child === undefined) return;
    if (ask.method === 'ping') return void child.send({ jsonrpc: '2.0', id: ask.id, result: {} }).catch(() => undefined);
    const n = this.#onlyRunning(() => true);
    const exchange = n === undefined ? undefined : this.#exchanges.get(n);
    if (exchange === undefined || n === undefined) {
      this.#dropped(ask, 'it belongs to no one request in flight');
      return void child.send(rpcError(ask.id, CODES.serverError, 'serve cannot tell which client this request is for')).catch(() => undefined);
    }
    const needed = INPUT_CAPABILITIES[ask.method];
    if (ask.method === 'roots/list' && exchange.capabilities.roots === undefined) {
      // A legacy server asks for roots at a moment of its own (after initialized, on a list change), seldom for
      // the call in flight: it is answered as a legacy client without roots answers, and the call goes on (one
      // that did need them fails at its server, which says why).
      return void child.send(rpcError(ask.id, CODES.methodNotFound, 'the client did not declare roots')).catch(() => undefined);
    }
    if (needed !== undefined && exchange.capabilities[needed] === undefined) {
      // The calling client cannot answer it: the revision's -32021 for the client, the call cancelled.
      this.#forget(n, true);
      child.send(rpcError(ask.id, CODES.serverError, `the client did not declare ${needed}`)).catch(() => undefined);
      child
        .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: n, reason: `the client did not declare ${needed}` } })
        .catch(() => undefined);
      const error = rpcError(
        exchange.id,
        MODERN_ERRORS.missingRequiredClientCapability,
        `the server needs the ${needed} capability, which the request did not declare`,
        {
          requiredCapabilities: { [needed]: {} },
        },
      );
      return this.#finish(exchange, error, 400);
    }
    // With replicas, the state names this one: a retry that another replica gets is carried here (see HttpFront).
    const state = this.#ctx.replica === undefined ? randomUUID() : `${this.#ctx.replica}.${randomUUID()}`;
    const key = 'input';
    const timer = setTimeout(() => {
      if (!this.#suspended.delete(state)) return;
      child.send(rpcError(ask.id, CODES.serverError, 'the client did not come back with an answer')).catch(() => undefined);
    }, INPUT_WAIT_MS);
    this.#suspended.set(state, { n, askId: ask.id, key, timer, caller: exchange.caller });
    this.#forget(n);
    const result = {
      resultType: 'input_required',
      inputRequests: { [key]: { method: ask.method, ...(ask.params === undefined ? {} : { params: ask.params }) } },
      requestState: state,
    };
    this.#finish(exchange, { jsonrpc: '2.0', id: exchange.id, result }, 200);
  }

  /** The request's answer, with its own id back: as JSON, or as the last event of its stream. */
  #answer(n: number, msg: Record<string, unknown>): void {
    const exchange = this.#exchanges.get(n);
    if (exchange === undefined || !this.#forget(n)) return;
    if (exchange.method === 'tools/list' && isObject(msg.result)) this.#params.learn(msg.result);
    const result = this.#legacy !== undefined && isObject(msg.result) ? modernResult(exchange.method, msg.result) : msg.result;
    this.#finish(exchange, { ...msg, ...(result === undefined ? {} : { result }), id: exchange.id }, statusOf(msg));
  }

  /** The last message of an exchange: the last event of its stream, or its JSON body with `status`. */
  #finish(exchange: Exchange, out: Record<string, unknown>, status: number): void {
    if (exchange.res.destroyed) return;
    if (exchange.streaming) exchange.res.end(`event: message\ndata: ${JSON.stringify(out)}\n\n`);
    else exchange.res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(out));
  }

  /** The exchange's response as an event stream, opened on its first notification. */
  #stream(exchange: Exchange): ServerResponse {
    if (!exchange.streaming) {
      exchange.streaming = true;
      exchange.res.writeHead(200, EVENT_STREAM_HEADERS);
      keepAlive(exchange.res, this.#ctx.stream.keepaliveMs);
    }
    return exchange.res;
  }

  /**
   * Drops a request's bookkeeping; false when it was gone already. `unfinished`: it was cancelled, and the child
   * may go on with it for a while (see CANCELLED_RUNS_MS).
   */
  #forget(n: number, unfinished = false): boolean {
    const exchange = this.#exchanges.get(n);
    if (exchange === undefined) return false;
    clearTimeout(exchange.timer);
    this.#exchanges.delete(n);
    if (exchange.upToken !== undefined) this.#tokens.delete(exchange.upToken);
    if (unfinished && exchange.method !== 'subscriptions/listen') {
      const timer = setTimeout(() => this.#unfinished.delete(n), CANCELLED_RUNS_MS);
      timer.unref();
      this.#unfinished.set(n, { timer, logs: exchange.logs, caller: exchange.caller });
    }
    return true;
  }

  /** The child answered request `id`: one it was told to cancel has finished after all. */
  #finished(id: unknown): void {
    const unfinished = typeof id === 'number' ? this.#unfinished.get(id) : undefined;
    if (unfinished === undefined) return;
    clearTimeout(unfinished.timer);
    this.#unfinished.delete(id as number);
  }

  #dropped(msg: unknown, why: string): void {
    this.#droppedCount++;
    if (this.#ctx.trace)
      this.#ctx.log.info('server.dropped', `dropped a message of the server for modern requests (${why}): ${JSON.stringify(msg).slice(0, 80)}`, {
        why,
      });
  }
}

/**
 * The era the answer to serve's own server/discover shows: modern for a DiscoverResult; legacy for method
 * not found, an unsupported-version error listing no modern revision, or no answer; undefined for anything else.
 */
function eraOf(probe: Record<string, unknown> | undefined): 'modern' | 'legacy' | undefined {
  if (probe === undefined) return 'legacy';
  if (isObject(probe.result)) return Array.isArray(probe.result.supportedVersions) ? 'modern' : undefined;
  const error = isObject(probe.error) ? probe.error : {};
  if (error.code === CODES.methodNotFound) return 'legacy';
  if (error.code === MODERN_ERRORS.unsupportedProtocolVersion) {
    const supported = isObject(error.data) && Array.isArray(error.data.supported) ? error.data.supported : [];
    return supported.some((v) => typeof v === 'string' && MODERN_PROTOCOL_VERSIONS.includes(v)) ? undefined : 'legacy';
  }
  return undefined;
}
