import { EventEmitter } from 'node:events';
import { isStdioServer, type ServerConfig } from './config.js';
import { preview } from './errors.js';
import { ConnectionError, StdioServerProcess, type ExitStatus, type StdioOptions } from './stdio.js';
import { VERSION } from './version.js';

/** The MCP protocol version asked for by default. */
export const LATEST_PROTOCOL_VERSION = '2025-06-18';

/** A JSON-RPC error response, as a rejection: the response's code, message and data. */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export interface RequestOptions {
  /**
   * Reject, and tell the server with notifications/cancelled, after this long.
   * @defaultValue the connection's requestTimeoutMs (60 s)
   */
  timeoutMs?: number;
  /** Abort the request: it rejects with ABORTED and the server is told with notifications/cancelled. */
  signal?: AbortSignal;
}

export interface ConnectOptions extends StdioOptions {
  /**
   * How long the whole handshake may take.
   * @defaultValue 30000
   */
  timeoutMs?: number;
  /**
   * The default timeout of requests.
   * @defaultValue 60000
   */
  requestTimeoutMs?: number;
  /** @defaultValue LATEST_PROTOCOL_VERSION */
  protocolVersion?: string;
  /** @defaultValue { name: 'mcp-frame', version } */
  clientInfo?: { name: string; version: string; [key: string]: unknown };
  /** @defaultValue {} */
  capabilities?: Record<string, unknown>;
  /** Called with the Connection before the handshake, to attach listeners ('frame', 'stderr', 'invalid'). */
  onSpawn?: (connection: Connection) => void;
}

/** A message crossing the connection, for tracing: which way, its size on the wire, a short redacted preview. */
export interface FrameTrace {
  direction: 'send' | 'receive';
  bytes: number;
  preview: string;
}

type Json = Record<string, unknown>;
type RequestHandler = (params: unknown, request: Json) => unknown;
type NotificationHandler = (params: unknown, notification: Json) => void;

interface Pending {
  method: string;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A JSON-RPC peer over a server's stdio: requests with timeouts and cancellation, notifications, and requests
 * from the server (ping is answered; others go to onRequest handlers or get -32601).
 *
 * Events: 'notification' (message), 'invalid' (FrameError: a stray or broken line from the server),
 * 'stderr' (line), 'frame' (FrameTrace, for each message in either direction), 'exit' (ExitStatus),
 * 'unmatched' (a response whose id matches no pending request), 'error' (an exception thrown by an
 * onNotification handler; without an 'error' listener it becomes a process warning).
 */
export class Connection extends EventEmitter {
  readonly #proc: StdioServerProcess;
  readonly #pending = new Map<number, Pending>();
  readonly #requestHandlers = new Map<string, RequestHandler>();
  readonly #notificationHandlers = new Map<string, NotificationHandler[]>();
  readonly #requestTimeoutMs: number;
  #nextId = 1;
  #initializeResult: Json | undefined;

  constructor(proc: StdioServerProcess, options: { requestTimeoutMs?: number } = {}) {
    super();
    this.#proc = proc;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    proc.on('message', (msg: unknown) => this.#receive(msg));
    proc.on('invalid', (err) => this.emit('invalid', err));
    proc.on('stderr', (line) => this.emit('stderr', line));
    proc.on('exit', (status: ExitStatus) => {
      this.#rejectAll((method) => proc.exitError(`request ${method} failed`));
      this.emit('exit', status);
    });
  }

  get pid(): number | undefined {
    return this.#proc.pid;
  }

  /** The server's answer to initialize (protocolVersion, capabilities, serverInfo, instructions). */
  get initializeResult(): Json | undefined {
    return this.#initializeResult;
  }

  /** The last lines the server wrote to stderr. */
  get stderrTail(): string[] {
    return this.#proc.stderrTail;
  }

  /** Sends a request and resolves with its result; an error response rejects with RpcError. */
  request(method: string, params?: unknown, options: RequestOptions = {}): Promise<unknown> {
    const id = this.#nextId++;
    const timeoutMs = options.timeoutMs ?? this.#requestTimeoutMs;
    const signal = options.signal;
    return new Promise<unknown>((resolve, reject) => {
      if (signal?.aborted) return reject(new ConnectionError('ABORTED', `request ${method} was aborted before it was sent`, { cause: signal.reason }));
      let timer: NodeJS.Timeout | undefined;
      const cancel = (error: ConnectionError, reason: string): void => {
        if (!this.#pending.has(id)) return;
        done();
        reject(error);
        // The server may still be working on it; tell it to stop. It may be gone already: that is fine.
        this.#send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } }).catch(() => undefined);
      };
      const onAbort = (): void => cancel(new ConnectionError('ABORTED', `request ${method} was aborted`, { cause: signal?.reason }), 'aborted by the client');
      const done = (): void => {
        this.#pending.delete(id);
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      this.#pending.set(id, {
        method,
        resolve: (result) => {
          done();
          resolve(result);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      timer = setTimeout(() => cancel(new ConnectionError('TIMEOUT', `request ${method} timed out after ${timeoutMs} ms`), `timed out after ${timeoutMs} ms`), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      const msg: Json = { jsonrpc: '2.0', id, method };
      if (params !== undefined) msg.params = params;
      this.#send(msg).catch((err: Error) => this.#pending.get(id)?.reject(err));
    });
  }

  /** Sends a notification; resolves once it is written (or buffered within the stream's limits). */
  notify(method: string, params?: unknown): Promise<void> {
    const msg: Json = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    return this.#send(msg);
  }

  /** Answers the server's requests for `method`; the handler's return value (or promise) is the result. */
  onRequest(method: string, handler: RequestHandler): this {
    this.#requestHandlers.set(method, handler);
    return this;
  }

  /** Calls `handler` for each notification of `method` from the server. */
  onNotification(method: string, handler: NotificationHandler): this {
    const list = this.#notificationHandlers.get(method) ?? [];
    list.push(handler);
    this.#notificationHandlers.set(method, list);
    return this;
  }

  /**
   * Ends the connection: pending requests reject with CLOSED, stdin is closed, and the server gets SIGTERM,
   * then SIGKILL, if it does not leave. Resolves once it has exited.
   */
  close(): Promise<ExitStatus> {
    const closing = this.#proc.close();
    this.#rejectAll((method) => new ConnectionError('CLOSED', `request ${method} failed: the connection was closed`));
    return closing;
  }

  /** @internal Performs the MCP handshake; used by connect(). */
  async initialize(options: ConnectOptions): Promise<void> {
    const result = await this.request(
      'initialize',
      {
        protocolVersion: options.protocolVersion ?? LATEST_PROTOCOL_VERSION,
        capabilities: options.capabilities ?? {},
        clientInfo: options.clientInfo ?? { name: 'mcp-frame', version: VERSION },
      },
      { timeoutMs: options.timeoutMs ?? 30_000 },
    );
    if (!isObject(result) || typeof result.protocolVersion !== 'string') {
      throw new ConnectionError('EXITED', `server "${this.#proc.name}" answered initialize without a protocolVersion: ${preview(JSON.stringify(result) ?? '')}`);
    }
    this.#initializeResult = result;
    await this.notify('notifications/initialized');
  }

  #send(msg: Json): Promise<void> {
    if (this.listenerCount('frame') > 0) this.#trace('send', msg);
    return this.#proc.send(msg);
  }

  #trace(direction: FrameTrace['direction'], msg: unknown): void {
    const json = JSON.stringify(msg);
    this.emit('frame', { direction, bytes: Buffer.byteLength(json) + 1, preview: preview(json) } satisfies FrameTrace);
  }

  #rejectAll(error: (method: string) => Error): void {
    for (const pending of [...this.#pending.values()]) pending.reject(error(pending.method));
  }

  #receive(msg: unknown): void {
    if (this.listenerCount('frame') > 0) this.#trace('receive', msg);
    if (Array.isArray(msg)) {
      for (const m of msg) this.#receive(m);
      return;
    }
    if (!isObject(msg)) return void this.emit('unmatched', msg);
    if (typeof msg.method === 'string') {
      if ('id' in msg) void this.#answer(msg);
      else this.#notification(msg);
      return;
    }
    const pending = typeof msg.id === 'number' ? this.#pending.get(msg.id) : undefined;
    if (pending === undefined) return void this.emit('unmatched', msg);
    if (isObject(msg.error)) {
      const { code, message, data } = msg.error;
      pending.reject(new RpcError(typeof code === 'number' ? code : -32603, typeof message === 'string' ? message : 'error without a message', data));
    } else {
      pending.resolve(msg.result);
    }
  }

  #notification(msg: Json): void {
    for (const handler of this.#notificationHandlers.get(msg.method as string) ?? []) {
      try {
        handler(msg.params, msg);
      } catch (err) {
        // A handler's own bug must not end the session: it goes to 'error' listeners, or becomes a warning.
        if (this.listenerCount('error') > 0) this.emit('error', err);
        else process.emitWarning(err as Error, { detail: `thrown by an onNotification handler for ${String(msg.method)}` });
      }
    }
    this.emit('notification', msg);
  }

  async #answer(request: Json): Promise<void> {
    const { id, method } = request as { id: unknown; method: string };
    const handler = this.#requestHandlers.get(method) ?? (method === 'ping' ? () => ({}) : undefined);
    let reply: Json;
    if (handler === undefined) {
      reply = { jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${method}` } };
    } else {
      try {
        reply = { jsonrpc: '2.0', id, result: (await handler(request.params, request)) ?? {} };
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        reply = { jsonrpc: '2.0', id, error: { code: Number.isInteger(code) ? code : -32603, message: (err as Error).message ?? String(err) } };
      }
    }
    await this.#send(reply).catch(() => undefined);
  }
}

/**
 * Starts a stdio server from its config entry, performs the MCP handshake (initialize, then
 * notifications/initialized), and resolves with the Connection. Rejects with a ConnectionError: SPAWN_FAILED
 * (naming the command), EXITED (with exit code or signal and the last stderr lines), TIMEOUT, or NOT_STDIO.
 */
export async function connect(server: ServerConfig, options: ConnectOptions = {}): Promise<Connection> {
  if (!isStdioServer(server)) {
    throw new ConnectionError('NOT_STDIO', `not a stdio server: "${options.name ?? server.url}" is an ${server.type} server, and only stdio servers can be connected to for now`);
  }
  const proc = new StdioServerProcess(server, options);
  await proc.started;
  const connection = new Connection(proc, options);
  options.onSpawn?.(connection);
  try {
    await connection.initialize(options);
  } catch (err) {
    // Reject now; the shutdown (stdin closed, then SIGTERM, then SIGKILL) goes on in the background.
    void connection.close();
    throw err;
  }
  return connection;
}
