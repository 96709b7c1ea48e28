/*
 * Between eras: a legacy host (it sends `initialize`) in front of a modern-only server, for `bridge` (a remote
 * server) and `serve` (a stdio one). The host's session is answered here, from the server's discover result; its
 * requests go to the server the modern way through a ModernPeer (a client's Connection); an `input_required`
 * result becomes the legacy request the host knows (`elicitation/create`, `sampling/createMessage`,
 * `roots/list`), and the host's answer completes the call; the server's notifications (progress, log messages)
 * flow back as they are. client/translate.ts opens the Connection it runs on.
 */
import { isObject } from '../jsonrpc.js';
import { CODES } from './codes.js';
import type { ListenFilter } from './listen.js';
import { INPUT_CAPABILITIES, META_SUBSCRIPTION_ID } from './modern.js';
import { RpcError } from './rpc-error.js';
import { LATEST_LEGACY_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSIONS } from './versions.js';

type Json = Record<string, unknown>;
type Id = string | number;

/** A subscriptions/listen as a peer opened it: what the server agreed to send. */
interface PeerSubscription {
  acknowledged: ListenFilter;
  close(): Promise<void>;
}

/** What the translation needs of the modern session to the server (a Connection of the client's is one). */
export interface ModernPeer {
  /** The server's discover result. */
  readonly initializeResult: Json | undefined;
  request(method: string, params: unknown, options: { signal: AbortSignal; timeoutMs: number }): Promise<unknown>;
  /** Answers the server's input requests of `method` (modern: an input_required result's inputRequests). */
  onRequest(method: string, handler: (params: unknown) => Promise<unknown>): unknown;
  on(event: 'notification', listener: (msg: Json) => void): unknown;
  listen(filter: ListenFilter, onNotification: (msg: Json) => void): Promise<PeerSubscription>;
}

/**
 * Whether a response to the host's initialize says the server is modern-only: an UnsupportedProtocolVersion
 * error (-32022) whose supported list names no legacy revision this client speaks.
 */
export function modernOnlyRefusal(msg: unknown): boolean {
  if (!isObject(msg) || !isObject(msg.error) || msg.error.code !== CODES.unsupportedProtocolVersion) return false;
  const data = msg.error.data;
  const supported = isObject(data) && Array.isArray(data.supported) ? data.supported : [];
  return supported.length > 0 && !supported.some((v) => LEGACY_PROTOCOL_VERSIONS.includes(String(v)));
}

/** The legacy session a host sees, over a modern Connection (a ModernPeer) to a modern server. */
export class LegacyHostSession {
  readonly #conn: ModernPeer;
  readonly #toHost: (msg: Json) => void;
  /** The host's requests in flight, to cancel. */
  readonly #inFlight = new Map<Id, AbortController>();
  /** Requests sent to the host for input, waiting for its answers. */
  readonly #asked = new Map<Id, { resolve: (result: unknown) => void; reject: (err: Error) => void }>();
  #next = 1;
  /**
   * The modern era's way to hear list changes and resource updates: one subscriptions/listen for what the host's
   * session advertises and the URIs it subscribed to (resources/subscribe), opened again when those change.
   */
  #listening: PeerSubscription | undefined;
  #agreed: ListenFilter = {};
  readonly #uris = new Set<string>();
  #closed = false;

  /**
   * `hostCapabilities` are what the host declared in initialize: only those inputs are forwarded to it (the
   * connection declares the same to the server, which then asks for no other kind).
   */
  constructor(conn: ModernPeer, toHost: (msg: Json) => void, hostCapabilities: Json) {
    this.#conn = conn;
    this.#toHost = toHost;
    for (const [method, capability] of Object.entries(INPUT_CAPABILITIES)) {
      if (hostCapabilities[capability] !== undefined) conn.onRequest(method, (params) => this.#askHost(method, params));
    }
    conn.on('notification', (msg: Json) => {
      // A listen stream's notifications come through its own callback (only the current stream's).
      const meta = isObject(msg.params) && isObject(msg.params._meta) ? msg.params._meta : undefined;
      if (meta?.[META_SUBSCRIPTION_ID] === undefined) toHost(msg);
    });
  }

  /**
   * Opens the subscriptions/listen behind what the server advertises (tools, prompts and resources list
   * changes, resource updates for the URIs subscribed). Resolves once acknowledged; a server that refuses it
   * leaves those capabilities out of the host's session.
   */
  async listenAdvertised(): Promise<void> {
    const caps = this.#serverCapabilities();
    const flag = (kind: string, name: string): boolean => isObject(caps[kind]) && (caps[kind] as Json)[name] === true;
    const filter: ListenFilter = {};
    if (flag('tools', 'listChanged')) filter.toolsListChanged = true;
    if (flag('prompts', 'listChanged')) filter.promptsListChanged = true;
    if (flag('resources', 'listChanged')) filter.resourcesListChanged = true;
    if (this.#uris.size > 0) filter.resourceSubscriptions = [...this.#uris];
    const previous = this.#listening;
    if (Object.keys(filter).length === 0) {
      this.#listening = undefined;
      this.#agreed = {};
      await previous?.close();
      return;
    }
    let current: PeerSubscription | undefined;
    const forward = (msg: Json): void => {
      if (current === undefined || current !== this.#listening) return;
      const params = isObject(msg.params) ? { ...msg.params } : {};
      const { [META_SUBSCRIPTION_ID]: _id, ...meta } = isObject(params._meta) ? params._meta : {};
      if (Object.keys(meta).length > 0) params._meta = meta;
      else delete params._meta;
      this.#toHost({ ...msg, params });
    };
    try {
      current = await this.#conn.listen(filter, forward);
    } catch {
      // Refused (or not spoken): nothing can be delivered, so nothing is advertised.
      this.#agreed = {};
      return;
    }
    if (this.#closed) return void (await current.close());
    this.#listening = current;
    this.#agreed = current.acknowledged;
    // Opened before the old one closes: no change falls between the two.
    await previous?.close();
  }

  #serverCapabilities(): Json {
    const discovered = this.#conn.initializeResult ?? {};
    return isObject(discovered.capabilities) ? discovered.capabilities : {};
  }

  /** The server's capabilities as the host's session has them: list changes only where a listen delivers them. */
  #hostCapabilities(): Json {
    const caps: Json = { ...this.#serverCapabilities() };
    const agreed = this.#agreed;
    const only = (kind: string, flag: string, kept: boolean): void => {
      if (!isObject(caps[kind])) return;
      const entry: Json = { ...(caps[kind] as Json) };
      if (kept) entry[flag] = true;
      else delete entry[flag];
      caps[kind] = entry;
    };
    only('tools', 'listChanged', agreed.toolsListChanged === true);
    only('prompts', 'listChanged', agreed.promptsListChanged === true);
    only('resources', 'listChanged', agreed.resourcesListChanged === true);
    return caps;
  }

  /** resources/subscribe and unsubscribe: the URI joins (or leaves) the listen's resourceSubscriptions. */
  async #subscribe(method: string, params: unknown): Promise<Json> {
    const uri = isObject(params) ? params.uri : undefined;
    if (typeof uri !== 'string') throw new RpcError(CODES.invalidParams, `${method} needs a uri`);
    if (method === 'resources/subscribe') this.#uris.add(uri);
    else this.#uris.delete(uri);
    await this.listenAdvertised();
    if (method === 'resources/subscribe' && !(this.#agreed.resourceSubscriptions ?? []).includes(uri)) {
      this.#uris.delete(uri);
      throw new RpcError(CODES.internalError, `the server did not agree to send updates of ${uri}`);
    }
    return {};
  }

  /** The answer to the host's initialize: the version it asked (or the newest this side speaks), the server's info. */
  initializeResult(asked: unknown): Json {
    const discovered = this.#conn.initializeResult ?? {};
    const meta = isObject(discovered._meta) ? discovered._meta : {};
    const serverInfo = isObject(meta['io.modelcontextprotocol/serverInfo'])
      ? meta['io.modelcontextprotocol/serverInfo']
      : { name: 'remote', version: '0' };
    const result: Json = {
      protocolVersion: typeof asked === 'string' && LEGACY_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_LEGACY_PROTOCOL_VERSION,
      capabilities: this.#hostCapabilities(),
      serverInfo,
    };
    if (typeof discovered.instructions === 'string') result.instructions = discovered.instructions;
    return result;
  }

  /** A message from the host. */
  fromHost(msg: unknown): void {
    if (!isObject(msg)) return;
    const id = msg.id as Id | undefined;
    if (typeof msg.method !== 'string') {
      // The host's answer to an input request.
      const waiting = id === undefined ? undefined : this.#asked.get(id);
      if (waiting === undefined) return;
      this.#asked.delete(id!);
      if (isObject(msg.error)) waiting.reject(new RpcError(Number(msg.error.code), String(msg.error.message ?? 'the host refused'), msg.error.data));
      else waiting.resolve(msg.result);
      return;
    }
    if (id === undefined) {
      if (msg.method === 'notifications/cancelled' && isObject(msg.params)) this.#inFlight.get(msg.params.requestId as Id)?.abort();
      // Other host notifications (initialized, roots list changed) have no modern counterpart to send.
      return;
    }
    if (msg.method === 'ping') return this.#toHost({ jsonrpc: '2.0', id, result: {} });
    if (msg.method === 'initialize')
      return this.#toHost({ jsonrpc: '2.0', id, result: this.initializeResult(isObject(msg.params) ? msg.params.protocolVersion : undefined) });
    const abort = new AbortController();
    this.#inFlight.set(id, abort);
    // The modern era has no resources/subscribe: a subscription is part of the listen stream.
    const subscribing = msg.method === 'resources/subscribe' || msg.method === 'resources/unsubscribe';
    const running = subscribing
      ? this.#subscribe(msg.method, msg.params)
      : this.#conn.request(msg.method, msg.params, { signal: abort.signal, timeoutMs: Infinity });
    running
      .then(
        (result) => this.#toHost({ jsonrpc: '2.0', id, result }),
        (err: Error) => {
          // A cancelled request gets no answer: the host gave up on it.
          if (abort.signal.aborted) return;
          const code = err instanceof RpcError ? err.code : CODES.serverError;
          const data =
            err instanceof RpcError
              ? err.data
              : typeof (err as { code?: unknown }).code === 'string'
                ? { code: (err as unknown as { code: string }).code }
                : undefined;
          this.#toHost({ jsonrpc: '2.0', id, error: { code, message: err.message, ...(data === undefined ? {} : { data }) } });
        },
      )
      .finally(() => this.#inFlight.delete(id));
  }

  /** Asks the host, as a legacy server would, for the input a modern server's input_required result wants. */
  #askHost(method: string, params: unknown): Promise<unknown> {
    const id = `mcp-frame-input-${this.#next++}`;
    return new Promise((resolve, reject) => {
      this.#asked.set(id, { resolve, reject });
      this.#toHost({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    });
  }

  /** The host went away: what it was asked can no longer be answered. */
  close(): void {
    this.#closed = true;
    void this.#listening?.close();
    this.#listening = undefined;
    for (const waiting of this.#asked.values()) waiting.reject(Object.assign(new Error('the host went away'), { code: 'CLOSED' }));
    this.#asked.clear();
    for (const abort of this.#inFlight.values()) abort.abort();
  }
}
