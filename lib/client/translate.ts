/*
 * Between eras: a legacy host (it sends `initialize`) in front of a modern-only server, for `bridge` (a remote
 * server) and `serve` (a stdio one). The
 * host's session is answered here, from the server's discover result; its requests go to the server the modern
 * way through a Connection; an `input_required` result becomes the legacy request the host knows
 * (`elicitation/create`, `sampling/createMessage`, `roots/list`), and the host's answer completes the call; the
 * server's notifications (progress, log messages) flow back as they are.
 */
import type { Channel } from './channel.js';
import { type Connection, connectOver, LATEST_PROTOCOL_VERSION, RpcError, SUPPORTED_PROTOCOL_VERSIONS } from './connection.js';
import { pickModernVersion } from './modern.js';
import { ConnectionError } from './errors.js';
import { isObject } from '../jsonrpc.js';

type Json = Record<string, unknown>;
type Id = string | number;

/** The input kinds a host may be asked for, and the capability that says it can answer each. */
const INPUTS: Record<string, string> = { 'elicitation/create': 'elicitation', 'sampling/createMessage': 'sampling', 'roots/list': 'roots' };

/**
 * Whether a response to the host's initialize says the server is modern-only: an UnsupportedProtocolVersion
 * error (-32022) whose supported list names no legacy revision this client speaks.
 */
export function modernOnlyRefusal(msg: unknown): boolean {
  if (!isObject(msg) || !isObject(msg.error) || msg.error.code !== -32022) return false;
  const data = msg.error.data;
  const supported = isObject(data) && Array.isArray(data.supported) ? data.supported : [];
  return supported.length > 0 && !supported.some((v) => SUPPORTED_PROTOCOL_VERSIONS.includes(String(v)));
}

/**
 * After `refusal` (see modernOnlyRefusal) of the host's initialize: a Connection over `channel` that speaks the
 * modern revision the server named, with the host's clientInfo and capabilities, and the host's session over
 * it, whose answer to that initialize is sent through `toHost`. Rejects when the server cannot be reached the
 * modern way either (the Connection is then closed).
 */
export async function startLegacyHostSession(
  channel: Channel,
  init: { id: unknown; params: Json },
  refusal: Json,
  toHost: (msg: Json) => void,
): Promise<{ session: LegacyHostSession; connection: Connection; version: string | undefined }> {
  const data = isObject(refusal.error) && isObject(refusal.error.data) ? refusal.error.data : {};
  const version = pickModernVersion(data.supported);
  const hostCapabilities = isObject(init.params.capabilities) ? init.params.capabilities : {};
  const connection = await connectOver(channel, {
    protocolVersion: version,
    capabilities: hostCapabilities,
    ...(isObject(init.params.clientInfo) ? { clientInfo: init.params.clientInfo as { name: string; version: string } } : {}),
  });
  const session = new LegacyHostSession(connection, toHost, hostCapabilities);
  toHost({ jsonrpc: '2.0', id: init.id, result: session.initializeResult(init.params.protocolVersion) });
  return { session, connection, version };
}

/** The legacy session a host sees, over a Connection to a modern server. */
export class LegacyHostSession {
  readonly #conn: Connection;
  readonly #toHost: (msg: Json) => void;
  /** The host's requests in flight, to cancel. */
  readonly #inFlight = new Map<Id, AbortController>();
  /** Requests sent to the host for input, waiting for its answers. */
  readonly #asked = new Map<Id, { resolve: (result: unknown) => void; reject: (err: Error) => void }>();
  #next = 1;

  /**
   * `hostCapabilities` are what the host declared in initialize: only those inputs are forwarded to it (the
   * connection declares the same to the server, which then asks for no other kind).
   */
  constructor(conn: Connection, toHost: (msg: Json) => void, hostCapabilities: Json) {
    this.#conn = conn;
    this.#toHost = toHost;
    for (const [method, capability] of Object.entries(INPUTS)) {
      if (hostCapabilities[capability] !== undefined) conn.onRequest(method, (params) => this.#askHost(method, params));
    }
    conn.on('notification', (msg: Json) => toHost(msg));
  }

  /** The answer to the host's initialize: the version it asked (or the newest this side speaks), the server's info. */
  initializeResult(asked: unknown): Json {
    const discovered = this.#conn.initializeResult ?? {};
    const meta = isObject(discovered._meta) ? discovered._meta : {};
    const serverInfo = isObject(meta['io.modelcontextprotocol/serverInfo'])
      ? meta['io.modelcontextprotocol/serverInfo']
      : { name: 'remote', version: '0' };
    const result: Json = {
      protocolVersion: typeof asked === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION,
      capabilities: isObject(discovered.capabilities) ? discovered.capabilities : {},
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
    this.#conn
      .request(msg.method, msg.params, { signal: abort.signal, timeoutMs: Infinity })
      .then(
        (result) => this.#toHost({ jsonrpc: '2.0', id, result }),
        (err: Error) => {
          // A cancelled request gets no answer: the host gave up on it.
          if (abort.signal.aborted) return;
          const code = err instanceof RpcError ? err.code : -32000;
          const data = err instanceof RpcError ? err.data : err instanceof ConnectionError ? { code: err.code } : undefined;
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
    for (const waiting of this.#asked.values()) waiting.reject(new ConnectionError('CLOSED', 'the host went away'));
    this.#asked.clear();
    for (const abort of this.#inFlight.values()) abort.abort();
  }
}
