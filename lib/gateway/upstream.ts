/*
 * One server behind the gateway: its Connection while it is up, why it is not otherwise, and its restart with
 * backoff when it dies. The gateway never waits on an upstream that is not up: a request to it fails at once
 * with an error that names it.
 */
import type { Logger } from '../log.js';
import { EventEmitter } from 'node:events';
import { isDeepStrictEqual } from 'node:util';
import type { ServerConfig } from '../client/config.js';
import { type Connection, type RequestOptions, RpcError, type Subscription } from '../client/connection.js';
import { isObject } from '../jsonrpc.js';
import { CODES } from '../protocol/codes.js';
import type { ListenFilter } from '../protocol/listen.js';
import { META_SUBSCRIPTION_ID } from '../protocol/modern.js';

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

  /** The servers are now `names` (a reload): one gone is forgotten, a new one is idle; the order is theirs. */
  reset(names: readonly string[]): void {
    const before = new Map(this.#states);
    this.#states.clear();
    for (const name of names) this.#states.set(name, before.get(name) ?? { state: 'idle', why: undefined });
    for (const name of this.#notes.keys()) if (!this.#states.has(name)) this.#notes.delete(name);
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
  /** See Upstream.transparent. */
  transparent?: boolean;
}

/**
 * Events: 'up' (the Connection is open), 'down' (why: it failed to start or died; a restart follows unless
 * the upstream is closed).
 */
export class Upstream extends EventEmitter {
  readonly name: string;
  readonly index: number;
  readonly entry: ServerConfig;
  /**
   * Its names are the client's as they are, unprefixed (another gateway's, whose servers are shared: see
   * GatewayOptions.transparent); not a server of its own in /healthz, metrics or the trail.
   */
  readonly transparent: boolean;
  #state: UpstreamState = 'idle';
  #connection: Connection | undefined;
  #why: string | undefined;
  #pending = 0;
  #restarts = 0;
  #upSince = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Replaced by a reload: its state no longer speaks for its name in /healthz. */
  #retired = false;
  /** Called when its last request in flight ends (see retire). */
  #idle: (() => void) | undefined;
  #starting: Promise<void> | undefined;
  /** The Connection being opened, so that close() can end its handshake. */
  #opening: Connection | undefined;
  readonly #options: UpstreamOptions;
  /** A modern server's resources the gateway subscribed to: each URI's subscriptions/listen stream (see #watch). */
  readonly #watches = new Map<string, Promise<Subscription>>();

  constructor(name: string, index: number, entry: ServerConfig, options: UpstreamOptions) {
    super();
    this.name = name;
    this.index = index;
    this.entry = entry;
    this.#options = options;
    this.transparent = options.transparent === true;
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
      if (connection.era === 'modern') this.#listenForChanges(connection);
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
    // The server's subscriptions went with it, as a legacy server's do.
    this.#watches.clear();
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
    if (!this.#retired) this.#options.health?.set(this.name, state, why);
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
      if (connection.era === 'modern' && (method === 'resources/subscribe' || method === 'resources/unsubscribe')) {
        return await this.#watch(connection, method, isObject(params) ? String(params.uri) : '');
      }
      return await connection.request(method, params, { timeoutMs: Infinity, ...options });
    } finally {
      this.#pending--;
      if (this.#pending === 0) this.#idle?.();
    }
  }

  /**
   * A client's resources/subscribe or resources/unsubscribe (of the initialize era, or the gateway's own for a
   * listen) at a modern server, which has no such methods: a subscriptions/listen stream of that URI, opened once
   * and closed by the unsubscribe.
   */
  async #watch(connection: Connection, method: string, uri: string): Promise<Record<string, never>> {
    if (method === 'resources/unsubscribe') {
      const watch = this.#watches.get(uri);
      this.#watches.delete(uri);
      await (await watch?.catch(() => undefined))?.close();
      return {};
    }
    let watch = this.#watches.get(uri);
    if (watch === undefined) {
      // Its notifications reach the gateway as every notification does (the Connection's 'notification').
      watch = connection.listen({ resourceSubscriptions: [uri] }, withoutStreamId);
      this.#watches.set(uri, watch);
      watch.catch(() => this.#watches.get(uri) === watch && this.#watches.delete(uri));
    }
    const subscription = await watch;
    if ((subscription.acknowledged.resourceSubscriptions ?? []).includes(uri)) return {};
    // A stream that does not carry the URI is of no use: closed, and the next subscribe asks again.
    if (this.#watches.get(uri) === watch) this.#watches.delete(uri);
    await subscription.close();
    throw new RpcError(CODES.invalidParams, `server "${this.name}" does not send updates of ${uri.slice(0, 200)}`);
  }

  /**
   * A modern server sends its list changes only on a subscriptions/listen stream: one is opened for the lists it
   * says can change, for as long as the connection lasts, its notifications reaching the gateway as a legacy
   * server's do (the catalog reads the list again; the clients are told).
   */
  #listenForChanges(connection: Connection): void {
    const caps = this.capabilities;
    const changes = (kind: string) => isObject(caps[kind]) && caps[kind].listChanged === true;
    const filter: ListenFilter = {
      ...(changes('tools') ? { toolsListChanged: true } : {}),
      ...(changes('prompts') ? { promptsListChanged: true } : {}),
      ...(changes('resources') ? { resourcesListChanged: true } : {}),
    };
    if (Object.keys(filter).length > 0) connection.listen(filter, withoutStreamId).catch(() => undefined);
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

  /**
   * Taken out of its gateway (a reload removed or changed its server): it is sent nothing new, its requests in
   * flight end as they would, and it is closed when the last has.
   */
  async retire(): Promise<void> {
    this.#retired = true;
    this.removeAllListeners('up').removeAllListeners('down');
    if (this.#pending > 0)
      await new Promise<void>((resolve) => {
        this.#idle = resolve;
      });
    await this.close();
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

/**
 * A notification of a listen stream of the gateway's own, without the stream's id, which is the server's and no
 * client's (the message was parsed for this connection alone: it is changed in place).
 */
function withoutStreamId(msg: Record<string, unknown>): void {
  if (isObject(msg.params) && isObject(msg.params._meta)) delete msg.params._meta[META_SUBSCRIPTION_ID];
}

/** What a Fleet makes its upstreams with, and tells of them. */
interface FleetOptions extends Omit<UpstreamOptions, 'setup' | 'transparent'> {
  /** The upstream whose names are the client's as they are (see Upstream.transparent). */
  transparent: string | undefined;
  setup(up: Upstream, connection: Connection): void;
  changed(up: Upstream, isUp: boolean): void;
  restarting(up: Upstream): void;
}

/** A gateway's upstreams, in config order: made, replaced by a reload, held and told as one. */
export class Fleet {
  /** In config order; changed in place by reconcile (a Catalog reads the same array). */
  readonly ups: Upstream[] = [];
  readonly #options: FleetOptions;
  /** Each Upstream's index: never one an earlier upstream had (what is known of an upstream is kept by it). */
  #indices = 0;

  constructor(options: FleetOptions) {
    this.#options = options;
  }

  /**
   * The upstreams are now `wanted`, in its order: an upstream of the same name and the same entry is kept, any
   * other made; returns those no longer among them (to be retired).
   */
  reconcile(wanted: ReadonlyArray<readonly [string, ServerConfig]>): Upstream[] {
    const byName = new Map(this.ups.map((up) => [up.name, up]));
    const next = wanted.map(([name, entry]) => {
      const up = byName.get(name);
      if (up === undefined || !sameEntry(up.entry, entry)) return this.#make(name, entry);
      byName.delete(name);
      return up;
    });
    this.ups.splice(0, this.ups.length, ...next);
    return [...byName.values()];
  }

  #make(name: string, entry: ServerConfig): Upstream {
    const { setup, changed, restarting, transparent, ...options } = this.#options;
    const through = name === transparent ? { transparent: true, health: undefined } : {};
    const up = new Upstream(name, this.#indices++, entry, { ...options, ...through, setup: (connection) => setup(up, connection) });
    up.on('up', () => changed(up, true));
    up.on('down', () => changed(up, false));
    up.on('restarting', () => restarting(up));
    return up;
  }

  /** Stops reading every server's output until the returned function is called (see Upstream.holdInput). */
  holdInput(): () => void {
    const releases = this.ups.map((up) => up.holdInput());
    return () => {
      for (const release of releases.splice(0)) release();
    };
  }

  /** A request to every server up that declared `capability`, each answer (or failure) waited for, and ignored. */
  async tell(capability: string, method: string, params: unknown, timeoutMs: number): Promise<void> {
    const ups = this.ups.filter((up) => up.state === 'up' && up.capabilities[capability] !== undefined);
    await Promise.all(ups.map((up) => up.request(method, params, { timeoutMs }).catch(() => undefined)));
  }
}

/** Two server entries that start the same server: equal as values, whatever the order of their keys. */
export const sameEntry = (a: ServerConfig | undefined, b: ServerConfig): boolean => isDeepStrictEqual(a, b);

/** What a reload changed, by server name (one whose entry is the same is none of these, and is not touched). */
export interface ServerChanges {
  added: string[];
  removed: string[];
  changed: string[];
}

/** What a reload from `before` to `after` changes, by server name. */
export function changesOf(
  before: ReadonlyArray<readonly [string, ServerConfig]>,
  after: ReadonlyArray<readonly [string, ServerConfig]>,
): ServerChanges {
  const old = new Map(before);
  const names = new Set(after.map(([name]) => name));
  return {
    added: after.filter(([name]) => !old.has(name)).map(([name]) => name),
    removed: before.filter(([name]) => !names.has(name)).map(([name]) => name),
    changed: after.filter(([name, entry]) => old.has(name) && !sameEntry(old.get(name), entry)).map(([name]) => name),
  };
}
