/*
 * One server behind the gateway: its Connection while it is up, why it is not otherwise, and its restart with
 * backoff when it dies. The gateway never waits on an upstream that is not up: a request to it fails at once
 * with an error that names it.
 */
import type { Logger } from '../log.js';
import { EventEmitter } from 'node:events';
import type { ServerConfig } from '../client/config.js';
import { type Connection, type RequestOptions, RpcError } from '../client/connection.js';
import { isObject } from '../jsonrpc.js';
import { CODES } from '../protocol/codes.js';

/** The JSON-RPC error code of a request the upstream it needs cannot take (down, starting, at its limit). */
export const UPSTREAM_ERROR = CODES.serverError;

/** `idle`: never asked to start; `starting`; `up`; `down` (failed or died: restarting later, unless closed). */
export type UpstreamState = 'idle' | 'starting' | 'up' | 'down';

/** What the gateway gives an opener: the capabilities to declare, and a hook called before the handshake. */
export interface UpstreamOpenOptions {
  capabilities: Record<string, unknown>;
  /** Attaches the gateway's request handlers and listeners to the Connection before it opens. */
  onSpawn(connection: Connection): void;
}

/** Opens the Connection to an upstream (a child process, a remote server); rejects when it cannot. */
export type UpstreamOpener = (name: string, entry: ServerConfig, options: UpstreamOpenOptions) => Promise<Connection>;

/** Each upstream's last known state across every gateway of a serve (for /healthz). */
export class UpstreamHealth {
  readonly #states = new Map<string, { state: UpstreamState; why: string | undefined }>();
  /** What is wrong with a server that is up (a list it did not answer in time), by name. */
  readonly #notes = new Map<string, string>();

  constructor(names: readonly string[]) {
    for (const name of names) this.#states.set(name, { state: 'idle', why: undefined });
  }

  set(name: string, state: UpstreamState, why?: string): void {
    this.#states.set(name, { state, why });
  }

  /** Says (or, with undefined, unsays) what is wrong with a server that is up. */
  note(name: string, problem: string | undefined): void {
    if (problem === undefined) this.#notes.delete(name);
    else this.#notes.set(name, problem);
  }

  /** Per upstream, its state, (when down) why, and (when up) any problem; in config order. */
  report(): Record<string, { state: UpstreamState; reason?: string; problem?: string }> {
    const out: Record<string, { state: UpstreamState; reason?: string; problem?: string }> = {};
    for (const [name, { state, why }] of this.#states) {
      const problem = state === 'up' ? this.#notes.get(name) : undefined;
      out[name] = { state, ...(state === 'down' && why !== undefined ? { reason: why } : {}), ...(problem === undefined ? {} : { problem }) };
    }
    return out;
  }

  /** The names of the upstreams known to be down. */
  down(): string[] {
    return [...this.#states].filter(([, s]) => s.state === 'down').map(([name]) => name);
  }
}

/** The first restart waits this long; each next one twice as long, up to RESTART_MAX_MS. */
const RESTART_FIRST_MS = 500;
const RESTART_MAX_MS = 30_000;
/** An upstream up this long before it dies starts its backoff over. */
const STABLE_MS = 60_000;

export interface UpstreamOptions {
  opener: UpstreamOpener;
  /** The capabilities to declare (the client's, known once it has initialized). */
  capabilities(): Record<string, unknown>;
  /** Attaches the gateway's handlers (see UpstreamOpenOptions.onSpawn). */
  setup(connection: Connection): void;
  /** Requests in flight at once; past it, a request fails at once (one slow upstream cannot hold the gateway). */
  maxPending: number;
  health: UpstreamHealth | undefined;
  log: Logger;
}

/**
 * Events: 'up' (the Connection is open), 'down' (why: it failed to start or died; a restart follows unless
 * the upstream is closed).
 */
export class Upstream extends EventEmitter {
  readonly name: string;
  readonly index: number;
  readonly entry: ServerConfig;
  #state: UpstreamState = 'idle';
  #connection: Connection | undefined;
  #why: string | undefined;
  #pending = 0;
  #restarts = 0;
  #upSince = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #starting: Promise<void> | undefined;
  /** The Connection being opened, so that close() can end its handshake. */
  #opening: Connection | undefined;
  readonly #options: UpstreamOptions;

  constructor(name: string, index: number, entry: ServerConfig, options: UpstreamOptions) {
    super();
    this.name = name;
    this.index = index;
    this.entry = entry;
    this.#options = options;
  }

  get state(): UpstreamState {
    return this.#state;
  }

  /** Why it is down, when it is. */
  get why(): string | undefined {
    return this.#why;
  }

  /** The server's initialize result (or discover result, for a modern one), while it is up. */
  get info(): Record<string, unknown> | undefined {
    const result = this.#connection?.initializeResult;
    return isObject(result) ? result : undefined;
  }

  /** The era the server speaks, while it is up. */
  get era(): 'modern' | 'legacy' | undefined {
    return this.#connection?.era;
  }

  /** The capabilities the server declared, while it is up. */
  get capabilities(): Record<string, unknown> {
    const caps = this.info?.capabilities;
    return isObject(caps) ? caps : {};
  }

  /** Starts it (once: a second call waits for the same start). Resolves when it is up or has failed; never rejects. */
  start(): Promise<void> {
    if (this.#closed || this.#state === 'up') return Promise.resolve();
    this.#starting ??= this.#open().finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  async #open(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#set('starting');
    try {
      const connection = await this.#options.opener(this.name, this.entry, {
        capabilities: this.#options.capabilities(),
        onSpawn: (c) => {
          this.#opening = c;
          this.#options.setup(c);
        },
      });
      this.#opening = undefined;
      if (this.#closed) {
        await connection.close();
        return;
      }
      this.#connection = connection;
      this.#upSince = Date.now();
      connection.on('exit', () => this.#lost(connection, 'the server is gone'));
      this.#set('up');
      this.#options.log.info(
        'upstream.started',
        `server "${this.name}" started${connection.pid === undefined ? '' : ` (pid ${connection.pid})`}, speaking ${connection.protocolVersion ?? 'an unknown revision'}`,
        { upstream: this.name, ...(connection.pid === undefined ? {} : { pid: connection.pid }), protocolVersion: connection.protocolVersion },
      );
      this.emit('up');
    } catch (err) {
      this.#opening = undefined;
      this.#failed(`it did not start: ${(err as Error).message}`);
    }
  }

  #lost(connection: Connection, why: string): void {
    if (this.#connection !== connection) return;
    this.#connection = undefined;
    if (Date.now() - this.#upSince >= STABLE_MS) this.#restarts = 0;
    const tail = connection.stderrTail.slice(-1)[0];
    this.#failed(tail === undefined ? why : `${why} (its last stderr line: ${tail.slice(0, 200)})`);
  }

  #failed(why: string): void {
    this.#why = why;
    this.#set('down', why);
    if (this.#closed) return;
    this.#options.log.warn('upstream.down', `server "${this.name}" is down: ${why}`, { upstream: this.name, why });
    this.emit('down', why);
    const delay = Math.min(RESTART_FIRST_MS * 2 ** this.#restarts++, RESTART_MAX_MS);
    this.#timer = setTimeout(() => {
      this.emit('restarting');
      void this.start();
    }, delay);
    this.#timer.unref();
  }

  #set(state: UpstreamState, why?: string): void {
    this.#state = state;
    if (state !== 'down') this.#why = undefined;
    this.#options.health?.set(this.name, state, why);
  }

  /**
   * A request to the server; an error naming it when it is not up or has maxPending requests in flight. Its
   * error answers reject with RpcError as they came.
   */
  async request(method: string, params: unknown, options: RequestOptions = {}): Promise<unknown> {
    const connection = this.#connection;
    if (connection === undefined || this.#state !== 'up') {
      const why = this.#state === 'starting' || this.#state === 'idle' ? 'it is starting' : (this.#why ?? 'it is down');
      throw new RpcError(UPSTREAM_ERROR, `server "${this.name}" is not available: ${why}`, { server: this.name });
    }
    if (this.#pending >= this.#options.maxPending) {
      throw new RpcError(UPSTREAM_ERROR, `server "${this.name}" has ${this.#pending} requests in flight already`, { server: this.name });
    }
    this.#pending++;
    try {
      return await connection.request(method, params, { timeoutMs: Infinity, ...options });
    } finally {
      this.#pending--;
    }
  }

  /** Says (or unsays, with undefined) what is wrong with it while it is up, for /healthz. */
  note(problem: string | undefined): void {
    this.#options.health?.note(this.name, problem);
  }

  /** Stops reading the server's output until the returned function is called (see Connection.holdInput). */
  holdInput(): () => void {
    return this.#connection?.holdInput() ?? (() => undefined);
  }

  /** A notification to the server, when it is up (dropped otherwise: there is nobody to tell). */
  notify(method: string, params?: unknown): void {
    this.#connection?.notify(method, params).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    // A handshake in progress is ended, not waited for (a slow server would hold close for its whole timeout).
    void this.#opening?.close();
    await this.#starting;
    const connection = this.#connection;
    this.#connection = undefined;
    await connection?.close();
  }
}
