/*
 * The gateway: several MCP servers offered as one. To its client it is one server (a Channel that speaks the
 * initialize era, as a child process would: serve's sessions, its modern hub and its socket take it where they
 * take a child); to each upstream it is a client (a Connection, of whichever era the upstream speaks).
 *
 * - Names: with more than one upstream, tools and prompts are `<server><separator><name>` (PrefixMode), and
 *   the allow/deny globs apply to those names. A name left out is unknown: listed nowhere, refused as unknown.
 * - Lists: every upstream's pages merged in config order, up to PAGE_ITEMS a page (a modest list is one page),
 *   under cursors of the gateway's own that carry the upstream's index and its own cursor; cache hints the most
 *   careful any upstream gave.
 * - Resources keep their URIs: a read goes to the upstream that listed the URI (the first in config order when
 *   two did), or whose template matches it.
 * - Routing back: progress by the gateway's own token, a request an upstream sends (sampling, elicitation,
 *   roots) to the client as a request of the gateway's (only those the client declared), list changes from any
 *   upstream (and an upstream going up or down) as the gateway's, cancellation to the upstream running it.
 * - Failures stay where they start: an upstream that is down takes its tools away and fails only its own calls,
 *   with an error that names it; it is restarted with backoff (see Upstream).
 */
import type { ParamHeader } from '../protocol/param-headers.js';
import { Catalog, completionTarget, initializeResult, type Kind } from './catalog.js';
import { type Call, RunningCalls, sendOptions } from './running.js';
import { LISTEN_ENDED, ModernFace } from './modern.js';
import { createLogger, type Logger, lineLogger } from '../log.js';
import { EventEmitter } from 'node:events';
import type { Channel } from '../client/channel.js';
import type { ServerConfig } from '../client/config.js';
import { type Connection, RpcError } from '../client/connection.js';
import { ConnectionError, type ExitStatus } from '../client/errors.js';
import { idKey, isObject, isRequest, isResponse } from '../jsonrpc.js';
import { INPUT_CAPABILITIES, RELAYED_CAPABILITIES, takeModernMeta } from '../protocol/modern.js';
import { type GatewayObserver, observeCall } from './observed.js';
import { LATEST_LEGACY_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSIONS } from '../protocol/versions.js';
import { type Policy, SERVE_ITSELF, withCaller } from './policy.js';
import type { Caller } from '../protocol/caller.js';
import { NameFilter, type PrefixMode } from './names.js';
import { Fleet, type Upstream, UPSTREAM_ERROR, type UpstreamHealth, type UpstreamOpener } from './upstream.js';
import { CODES } from '../protocol/codes.js';
import { SearchFace } from './search.js';

export interface GatewayOptions {
  /** The upstreams, in config order (the order of merged lists, and which wins a URI two list). */
  upstreams: ReadonlyArray<readonly [string, ServerConfig]>;
  /** Opens each upstream's Connection. */
  open: UpstreamOpener;
  /** The gateway's name in its serverInfo. @defaultValue 'mcp-frame' */
  name?: string;
  /** @defaultValue '__' */
  separator?: string;
  /** @defaultValue 'always' */
  prefix?: PrefixMode;
  /**
   * Name one server's tools and prompts with its prefix too, as they would be beside others (a policy written for
   * the gateway then holds when a server is added). @defaultValue false: one server keeps its names
   */
  prefixOne?: boolean;
  /** Globs on the exposed tool names: a tool must match one of `allow` (when any is given) and none of `deny`. */
  allowTools?: readonly string[];
  denyTools?: readonly string[];
  /** The same, for prompts. */
  allowPrompts?: readonly string[];
  denyPrompts?: readonly string[];
  /** How long initialize waits for the upstreams; the ones not up by then join later, with a list change. @defaultValue 10000 */
  startTimeoutMs?: number;
  /** Requests in flight at once to one upstream. @defaultValue 1024 */
  maxPendingPerUpstream?: number;
  health?: UpstreamHealth;
  /** Where its lines go, as text (every level). */
  log?: (line: string) => void;
  /** Where its lines go, with levels, events and fields (in place of `log`). */
  logger?: Logger;
  /** Who may call what: tools and prompts it does not allow a caller are not there for that caller. Read on every use (it may be reloaded). */
  policy?: () => Policy | undefined;
  /** Told of every request sent on to a server, and of every restart. */
  observer?: GatewayObserver;
  /** A span per request sent on to a server (with @opentelemetry/api loaded). @defaultValue false */
  tracing?: boolean;
  /** The caller of every message, unless send() names another (a session's signed-in caller). */
  caller?: Caller;
  /** The session of every message, unless send() names another (a gateway of one session's own): for the audit trail. */
  session?: string;
  /** Claims of the caller put in each forwarded request's `_meta` under `mcp-frame/caller` (never the token). */
  forwardClaims?: readonly string[];
  /**
   * Its client is several callers (serve's modern requests share one gateway): a request of a server that
   * cannot be attributed to one call in flight is refused to that server at once, never passed on to be guessed.
   * @defaultValue false
   */
  shared?: boolean;
  /** How long the gateway's own requests (lists, setLevel) may take before the server is skipped for them. @defaultValue 10000 */
  listTimeoutMs?: number;
  /** How long a client's request sent on to a server may take before it is cancelled there. @defaultValue 600000 */
  callTimeoutMs?: number;
  /** What the requestStates of its input_required results start with (serve's replica id, with replicas). */
  statePrefix?: string;
  /**
   * Tool search: tools/list gives search_tools and call_tool, and the tools whose exposed names match `pin` (see
   * search.ts); a call of any exposed name still works. @defaultValue undefined: every tool listed
   */
  toolSearch?: { pin?: readonly string[] };
  /**
   * The upstream (by name) that is another gateway, in front of servers shared with other sessions: its names
   * are exposed as they are (that gateway's), and it is no server of its own in metrics, spans or /healthz.
   */
  transparent?: string;
}

export type { GatewayObserver } from './observed.js';

/** A logger that writes nothing: a gateway given no log. */
const SILENT: Logger = createLogger({ write: () => undefined, level: 'error' });

export { CALLER_META, SERVE_ITSELF } from './policy.js';

type Json = Record<string, unknown>;

/** The list methods, and the kind of list each reads. */
const LISTS: Readonly<Record<string, Kind>> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'templates',
};

export class Gateway extends EventEmitter implements Channel {
  readonly name: string;
  /** In process: started at once (its upstreams start at initialize). */
  readonly started: Promise<void> = Promise.resolve();
  readonly pid = undefined;
  /** The upstreams in config order (the Catalog reads this array: a reload changes it in place). */
  readonly #ups: Upstream[];
  readonly #fleet: Fleet;
  readonly #separator: string;
  readonly #prefix: PrefixMode;
  readonly #filters: Record<'tools' | 'prompts', NameFilter>;
  readonly #startTimeoutMs: number;
  readonly #log: Logger;
  readonly #policy: () => Policy | undefined;
  readonly #caller: Caller | undefined;
  readonly #session: string | undefined;
  readonly #forwardClaims: readonly string[];
  readonly #observer: GatewayObserver | undefined;
  readonly #tracing: boolean;
  /** The requests sent on to the servers that may still run there (a server's messages are attributed among them). */
  readonly #calls = new RunningCalls();
  /** The gateway's own requests to the client (a server's, passed on), by id. */
  readonly #asks = new Map<string, { resolve(result: unknown): void; reject(error: Error): void }>();
  readonly #shared: boolean;
  readonly #listTimeoutMs: number;
  readonly #callTimeoutMs: number;
  #droppedCount = 0;
  /**
   * The client sent notifications/initialized: until then a list change is held (the lifecycle: nothing but the
   * initialize result and logging before it), and sent once it is.
   */
  #clientInitialized = false;
  readonly #heldChanges = new Set<string>();
  /** What the gateway knows of its upstreams' lists, and the merged lists it answers with. */
  readonly #catalog: Catalog;
  #clientCapabilities: Json = {};
  /** A client of the initialize era has initialized: list changes go to it (a modern client has listens). */
  #legacyClient = false;
  readonly #modern: ModernFace;
  readonly #search: SearchFace | undefined;
  #initialized: Promise<Json> | undefined;
  #ready = false;
  #next = 1;
  #closed = false;
  #closing: Promise<ExitStatus> | undefined;

  constructor(options: GatewayOptions) {
    super();
    this.name = options.name ?? 'mcp-frame';
    this.#separator = options.separator ?? '__';
    this.#prefix = options.prefix ?? 'always';
    this.#filters = {
      tools: new NameFilter(options.allowTools, options.denyTools),
      prompts: new NameFilter(options.allowPrompts, options.denyPrompts),
    };
    this.#startTimeoutMs = options.startTimeoutMs ?? 10_000;
    this.#log = options.logger ?? (options.log === undefined ? SILENT : lineLogger(options.log));
    this.#policy = options.policy ?? (() => undefined);
    this.#caller = options.caller;
    this.#session = options.session;
    this.#forwardClaims = options.forwardClaims ?? [];
    this.#shared = options.shared ?? false;
    this.#listTimeoutMs = options.listTimeoutMs ?? 10_000;
    this.#callTimeoutMs = options.callTimeoutMs ?? 600_000;
    this.#observer = options.observer;
    this.#tracing = options.tracing ?? false;
    this.#fleet = new Fleet({
      opener: options.open,
      capabilities: () => this.#clientCapabilities,
      setup: (up, connection) => this.#attach(up, connection),
      changed: (up, isUp) => this.#changed(up, isUp),
      restarting: (up) => this.#observer?.upstreamRestart?.(up.name),
      maxPending: options.maxPendingPerUpstream ?? 1024,
      health: options.health,
      log: this.#log,
      transparent: options.transparent,
    });
    this.#ups = this.#fleet.ups;
    this.#fleet.reconcile(options.upstreams);
    this.#modern = new ModernFace(
      {
        start: () => this.start(RELAYED_CAPABILITIES),
        dispatch: (call, method, params) => this.#dispatch(call, method, params),
        uriRequest: (method, uri) => this.#uriRequest(method, uri),
        emit: (msg) => !this.#closed && this.emit('message', msg),
        calls: this.#calls,
        ups: () => this.#ups,
      },
      options.statePrefix,
    );
    this.#search =
      options.toolSearch === undefined
        ? undefined
        : new SearchFace(options.toolSearch.pin ?? [], {
            page: (cursor) => this.#list('tools', cursor === undefined ? {} : { cursor }, SERVE_ITSELF),
            allowed: (caller, name) => this.#allowed(caller, 'tools', name),
            call: (call, params) => this.#named(call, 'tools', 'tools/call', params),
          });
    this.#catalog = new Catalog({
      ups: this.#ups,
      separator: this.#separator,
      prefix: this.#prefix,
      filters: this.#filters,
      listTimeoutMs: this.#listTimeoutMs,
      log: this.#log,
      prefixOne: options.prefixOne === true,
    });
  }

  /**
   * The servers are now `upstreams` (a reload): a server whose entry is the same is left as it is (its process
   * and its calls go on); one gone, or whose entry changed, leaves the lists at once and is closed when its calls
   * in flight have ended; a new one (a changed one anew) starts at once when the gateway has. The client is told
   * its lists changed. Resolves when those gone are closed.
   */
  async reconfigure(upstreams: ReadonlyArray<readonly [string, ServerConfig]>): Promise<void> {
    if (this.#closed) return;
    const gone = this.#fleet.reconcile(upstreams);
    for (const up of gone) this.#catalog.forget(up);
    if (this.#initialized !== undefined) for (const up of this.#ups) if (up.state === 'idle') void up.start();
    if (gone.length > 0) this.#changed(undefined, false);
    await Promise.all(gone.map((up) => up.retire()));
  }

  /** A message from the client; `caller`: who sent it, when not the gateway's own caller; `session`: where it came in. */
  send(msg: unknown, caller?: Caller, session = this.#session): Promise<void> {
    if (this.#closed) return Promise.reject(this.endError('the gateway'));
    const who = caller ?? this.#caller;
    if (isRequest(msg)) {
      const call: Call = { key: idKey(msg.id), id: msg.id, caller: who, session };
      const modern = takeModernMeta(msg.params);
      if (modern !== undefined) call.modern = { capabilities: modern.capabilities, interrupt: () => false };
      void this.#request(call, msg.method, modern?.params ?? (isObject(msg.params) ? msg.params : {}));
    } else if (isResponse(msg)) this.#answered(msg as unknown as Json, who);
    else if (isObject(msg) && typeof msg.method === 'string') this.#notification(msg.method, isObject(msg.params) ? msg.params : {}, who);
    return Promise.resolve();
  }

  /** Messages of the servers that could be attributed to no call in flight, and were dropped (or, for requests, refused). */
  get dropped(): number {
    return this.#droppedCount;
  }

  endError(what: string): ConnectionError {
    return new ConnectionError('CLOSED', `${what}: the gateway "${this.name}" is closed`);
  }

  /**
   * Stops reading every server's output until the returned function is called: a client that does not read
   * holds the servers (their pipes and streams fill and they wait), as a session's own child is held, instead of
   * their output piling up here.
   */
  holdInput(): () => void {
    return this.#fleet.holdInput();
  }

  close(): Promise<ExitStatus> {
    this.#closing ??= (async () => {
      this.#closed = true;
      this.#modern.close(this.endError('the request'));
      for (const ask of this.#asks.values()) ask.reject(this.endError('the request'));
      this.#asks.clear();
      this.#calls.close();
      await Promise.all(this.#ups.map((up) => up.close()));
      const status: ExitStatus = { code: 0, signal: null };
      this.emit('end');
      this.emit('close', status);
      return status;
    })();
    return this.#closing;
  }

  /**
   * Opens every upstream (declaring the capabilities the client declared, so that each may ask it what the client
   * can answer) and waits for them, at most startTimeoutMs. With `never`, a name two upstreams offer is an error.
   */
  start(capabilities: Json = {}): Promise<Json> {
    this.#initialized ??= (async () => {
      const declared: Json = {};
      for (const capability of Object.values(INPUT_CAPABILITIES))
        if (capabilities[capability] !== undefined) declared[capability] = capabilities[capability];
      this.#clientCapabilities = declared;
      const all = Promise.all(this.#ups.map((up) => up.start()));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.#startTimeoutMs);
      });
      await Promise.race([all, late]);
      clearTimeout(timer);
      for (const up of this.#ups)
        if (up.state !== 'up')
          this.#log.warn('upstream.not_up', `server "${up.name}" is not up yet (${up.why ?? 'starting'}): its tools join when it is`, {
            upstream: up.name,
            why: up.why ?? 'starting',
          });
      this.#ready = true;
      void this.#catalog.warnUnmatched(this.#policy());
      return initializeResult(this.#ups, this.name);
    })();
    return this.#initialized;
  }

  /** The policy was replaced: a rule's glob that matches no tool any server offers is warned of (see Catalog.warnUnmatched). */
  policyChanged(): Promise<void> {
    this.#catalog.recheck();
    return this.#ready ? this.#catalog.warnUnmatched(this.#policy()) : Promise.resolve();
  }

  /** The names two upstreams both offer (tools and prompts), as `name (a, b)`: what `never` refuses at start. */
  clashes(): Promise<string[]> {
    return this.#catalog.clashes();
  }

  /**
   * The Mcp-Param-* declarations (x-mcp-header) of the tool exposed as `exposed`, as its server last listed it
   * through this gateway; undefined when the gateway has not seen it listed since the server last changed (the
   * caller then reads the list). serve checks a modern call's headers by it, with no list read for the call.
   */
  declaredHeaders(exposed: string): readonly ParamHeader[] | undefined {
    return this.#catalog.declaredHeaders(exposed);
  }

  /** One page of the merged list of `kind`, of what `caller` may see. */
  async #list(kind: Kind, params: Json, caller: Caller | undefined): Promise<Json> {
    await this.start();
    return this.#catalog.list(kind, params, (k, exposed) => this.#allowed(caller, k, exposed));
  }

  // ---- the client's messages

  async #request(call: Call, method: string, params: Json): Promise<void> {
    const { key, id } = call;
    // A cancelled request of the initialize era gets no answer; a modern one's is dropped by whoever cancelled it,
    // and one the gateway ended itself (-32021) must reach its client.
    const silenced = (): boolean => call.modern === undefined && this.#calls.get(key)?.cancelled === true;
    try {
      const result =
        call.modern === undefined ? await this.#dispatch(call, method, params) : await this.#modern.request(call as Required<Call>, method, params);
      if (result === LISTEN_ENDED) return;
      if (!silenced()) this.#emit({ jsonrpc: '2.0', id, result });
    } catch (err) {
      if (silenced()) return;
      const error =
        err instanceof RpcError
          ? { code: err.code, message: err.message, ...(err.data === undefined ? {} : { data: err.data }) }
          : { code: err instanceof ConnectionError ? UPSTREAM_ERROR : CODES.internalError, message: (err as Error).message };
      this.#emit({ jsonrpc: '2.0', id, error });
    } finally {
      this.#calls.forget(key);
    }
  }

  #dispatch(call: Call, method: string, params: Json): Promise<unknown> {
    const list = LISTS[method];
    if (list === 'tools' && this.#search !== undefined) return this.start().then(() => this.#search!.list(call.caller));
    if (list !== undefined) return this.#list(list, params, call.caller);
    switch (method) {
      case 'initialize':
        return this.#initialize(params);
      case 'ping':
        return Promise.resolve({});
      case 'tools/call':
        return this.#search?.handles(params.name) ? this.#search.call(call, params) : this.#named(call, 'tools', method, params);
      case 'prompts/get':
        return this.#named(call, 'prompts', method, params);
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return this.#byUri(call, method, params);
      case 'completion/complete':
        return this.#complete(call, params);
      case 'logging/setLevel':
        return this.#setLevel(params, call.caller);
      default:
        return Promise.reject(new RpcError(CODES.methodNotFound, `Method not found: ${method}`));
    }
  }

  async #initialize(params: Json): Promise<Json> {
    this.#legacyClient = true;
    const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : undefined;
    const result = await this.start(isObject(params.capabilities) ? params.capabilities : {});
    const protocolVersion = asked !== undefined && LEGACY_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_LEGACY_PROTOCOL_VERSION;
    return { ...result, protocolVersion };
  }

  #notification(method: string, params: Json, caller: Caller | undefined): void {
    if (method === 'notifications/cancelled') {
      this.#calls.cancel(idKey(params.requestId), typeof params.reason === 'string' ? params.reason : 'cancelled by the client');
      this.#modern.cancelled(idKey(params.requestId));
      return;
    }
    if (method === 'notifications/initialized') {
      this.#clientInitialized = true;
      for (const changed of this.#heldChanges) this.#emit({ jsonrpc: '2.0', method: changed });
      this.#heldChanges.clear();
      return;
    }
    // roots/list_changed, and anything else a client tells its server: every upstream hears it.
    if (method === 'notifications/roots/list_changed') for (const up of this.#ups) up.notify(method, withCaller(this.#forwardClaims, params, caller));
  }

  /** The client's answer to one of the gateway's requests (its `_meta` carries the answering caller's claims or none). */
  #answered(msg: Json, caller: Caller | undefined): void {
    const ask = typeof msg.id === 'string' ? this.#asks.get(msg.id) : undefined;
    if (ask === undefined) return;
    this.#asks.delete(msg.id as string);
    if (isObject(msg.error)) {
      const { code, message, data } = msg.error;
      ask.reject(new RpcError(typeof code === 'number' ? code : CODES.internalError, typeof message === 'string' ? message : 'error', data));
    } else ask.resolve(isObject(msg.result) ? withCaller(this.#forwardClaims, msg.result, caller) : msg.result);
  }

  /** `related`: the client's id of the call the message belongs to, when the gateway knows it (see #ask). */
  #emit(msg: Json, related?: unknown): void {
    if (this.#closed) return;
    // A list change or resource update goes to the listens that agreed to it, and to a client of the initialize era.
    if (this.#modern.deliver(msg) && !this.#legacyClient) return;
    if (!this.#clientInitialized && typeof msg.method === 'string' && msg.method.endsWith('/list_changed')) {
      this.#heldChanges.add(msg.method);
      return;
    }
    this.emit('message', msg, related);
  }

  // ---- calls

  /** A tools/call or prompts/get, to the upstream whose tool or prompt it names, under that upstream's name. */
  async #named(call: Call, kind: 'tools' | 'prompts', method: string, params: Json): Promise<unknown> {
    await this.start();
    const exposed = typeof params.name === 'string' ? params.name : '';
    const allowed = this.#allowed(call.caller, kind, exposed);
    const found = exposed === '' || !allowed ? undefined : await this.#catalog.resolve(kind, exposed);
    if (found === undefined) {
      const why = !allowed ? 'policy' : this.#catalog.filtered(kind, exposed) ? 'filter' : undefined;
      if (why !== undefined && exposed !== '') this.#observer?.refused?.({ method, name: exposed, why, caller: call.caller, session: call.session });
      throw new RpcError(CODES.invalidParams, `Unknown ${kind === 'tools' ? 'tool' : 'prompt'}: ${String(exposed).slice(0, 120)}`);
    }
    return this.#forward(call, found.up, method, { ...params, name: found.name }, exposed);
  }

  /** A resource request, to the upstream that listed its URI or whose template matches it. */
  async #byUri(call: Call, method: string, params: Json): Promise<unknown> {
    await this.start();
    const uri = typeof params.uri === 'string' ? params.uri : undefined;
    if (uri === undefined) throw new RpcError(CODES.invalidParams, `${method} needs a uri`);
    const up = await this.#catalog.findUriOwner(uri);
    if (up === undefined)
      throw new RpcError(CODES.resourceNotFound, `Resource not found: no server behind the gateway offers ${uri.slice(0, 200)}`, { uri });
    return this.#forward(call, up, method, params, uri);
  }

  /** A resource request of the gateway's own to the server that offers `uri` (a listen's subscription); whether it succeeded. */
  async #uriRequest(method: string, uri: string): Promise<boolean> {
    const up = await this.#catalog.findUriOwner(uri);
    return up === undefined
      ? false
      : up.request(method, { uri }, { timeoutMs: this.#listTimeoutMs }).then(
          () => true,
          () => false,
        );
  }

  async #complete(call: Call, params: Json): Promise<unknown> {
    await this.start();
    const target = await completionTarget(this.#catalog, params, (name) => this.#allowed(call.caller, 'prompts', name));
    return this.#forward(call, target.up, 'completion/complete', target.params);
  }

  async #setLevel(params: Json, caller: Caller | undefined): Promise<Json> {
    await this.start();
    await this.#fleet.tell('logging', 'logging/setLevel', withCaller(this.#forwardClaims, params, caller), this.#listTimeoutMs);
    return {};
  }

  /**
   * Sends a client's request on to `up`, with a progress token of the gateway's; the client's cancellation
   * aborts it, and so does callTimeoutMs. A request cancelled either way may go on at its server: it counts as
   * running there for a while yet (see CANCELLED_RUNS_MS).
   */
  async #forward(call: Call, up: Upstream, method: string, params: Json, name?: string): Promise<unknown> {
    const forwarded = this.#calls.begin(call, up);
    let out = withCaller(this.#forwardClaims, params, call.caller);
    let token: string | undefined;
    if (isObject(params._meta) && params._meta.progressToken !== undefined) {
      token = this.#calls.token(up, params._meta.progressToken);
      out = { ...out, _meta: { ...(out._meta as Json), progressToken: token } };
    }
    const watch = observeCall(up.transparent ? undefined : this.#observer, this.#tracing, { ...call, upstream: up.name, method, params: out, name });
    let outcome: 'ok' | 'error' | 'tool_error' | 'gone' = 'ok';
    let failure: unknown;
    try {
      const result = await up.request(method, watch.params, sendOptions(forwarded, this.#callTimeoutMs));
      if (isObject(result) && result.isError === true) outcome = 'tool_error';
      return this.#modern.created(up, call.caller, result);
    } catch (err) {
      outcome = err instanceof RpcError ? 'error' : 'gone';
      failure = err;
      throw err;
    } finally {
      if (token !== undefined) this.#calls.dropToken(token);
      const code = (failure as { code?: unknown } | undefined)?.code;
      this.#calls.settle(forwarded, code === 'ABORTED' || code === 'TIMEOUT');
      watch.end(outcome, failure);
    }
  }

  /** Whether the policy (when there is one) lets `caller` see and call a tool or prompt; serve itself sees every one. */
  #allowed(caller: Caller | undefined, kind: 'tools' | 'prompts', exposed: string): boolean {
    if (caller === SERVE_ITSELF) return true;
    return this.#policy()?.allows(caller, kind, exposed) ?? true;
  }

  // ---- the upstreams' messages

  /** Before an upstream's handshake: its notifications to here, and its requests that the client can answer to the client. */
  #attach(up: Upstream, connection: Connection): void {
    connection.on('notification', (msg: Json, related?: unknown) => this.#fromUpstream(up, msg, related));
    for (const [method, capability] of Object.entries(INPUT_CAPABILITIES)) {
      if (this.#clientCapabilities[capability] === undefined) {
        // A shared gateway declares what any of its callers may answer; a question for nobody is refused at once.
        if (this.#shared) connection.onRequest(method, () => this.#refuse(up, method, 'no caller declared it can answer it'));
        continue;
      }
      connection.onRequest(method, (params, _request, related) => this.#ask(up, method, params, related));
    }
  }

  /**
   * A request of the gateway's to the client (an upstream's, passed on), and its answer. The call it belongs to
   * (see #ownerOf) has its id go with the message, as a second argument of 'message' (never on the wire), so that
   * a consumer serving several callers (serve's modern requests) sends it to the caller whose call asked. A
   * shared gateway refuses a question that belongs to no call at once (the server hears an error), so that it
   * never reaches a caller it is not for, nor waits out a timeout.
   */
  #ask(up: Upstream, method: string, params: unknown, related?: unknown): Promise<unknown> {
    if (this.#closed) return Promise.reject(this.endError('the request'));
    const owner = this.#calls.ownerOf(up, related);
    if (owner === undefined && this.#shared) return this.#refuse(up, method, 'it belongs to no one call in flight');
    if (owner?.modern !== undefined) return this.#modern.ask(owner, owner.modern, method, params);
    const id = `mcp-frame-${this.#next++}`;
    return new Promise((resolve, reject) => {
      this.#asks.set(id, { resolve, reject });
      if (!this.#closed) this.emit('message', { jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }, owner?.id);
    });
  }

  /** Refuses a server's request that no caller can be given: counted, logged, and an error to the server. */
  #refuse(up: Upstream, method: string, why: string): Promise<never> {
    this.#droppedCount++;
    this.#log.warn('upstream.refused', `refused ${method} of server "${up.name}": ${why}`, { upstream: up.name, method });
    return Promise.reject(new RpcError(UPSTREAM_ERROR, `the gateway cannot tell which caller ${method} is for: ${why}`));
  }

  #fromUpstream(up: Upstream, msg: Json, related?: unknown): void {
    const method = msg.method as string;
    const params = isObject(msg.params) ? msg.params : {};
    if (method === 'notifications/progress') {
      // Only for a token this server was given: a server cannot speak in another server's calls.
      const given = this.#calls.clientToken(up, params.progressToken);
      if (given === undefined) {
        this.#droppedCount++;
        return;
      }
      this.#emit({ jsonrpc: '2.0', method, params: { ...params, progressToken: given.token } });
      return;
    }
    this.#catalog.listChanged(up, method);
    if (method === 'notifications/tools/list_changed') this.#search?.changed();
    if (method.endsWith('/list_changed')) void this.#catalog.warnUnmatched(this.#policy());
    if (method === 'notifications/message') {
      // A server's log is its session's: the call it belongs to only when it is the one call running there; a
      // shared gateway's client is several callers, and a log that is no one call's is given to none of them.
      const owner = this.#calls.ownerOf(up, related);
      if (owner === undefined && this.#shared) {
        this.#droppedCount++;
        return;
      }
      const logger = up.transparent ? params.logger : typeof params.logger === 'string' ? `${up.name}/${params.logger}` : up.name;
      this.#emit({ jsonrpc: '2.0', method, params: { ...params, logger } }, owner?.id);
      return;
    }
    // notifications/cancelled is about the upstream's own requests to the client: the client never saw their ids;
    // an acknowledged listen is one of the gateway's own (its clients' listens it acknowledges itself).
    if (method === 'notifications/cancelled' || method === 'notifications/subscriptions/acknowledged') return;
    this.#emit({ jsonrpc: '2.0', method, ...(msg.params === undefined ? {} : { params: msg.params }) });
  }

  /** `up` came up or went down (undefined: servers left, in a reload): the client is told its lists changed. */
  #changed(up: Upstream | undefined, isUp: boolean): void {
    if (up !== undefined) this.#catalog.upstreamChanged(up, isUp);
    this.#search?.changed();
    if (!this.#ready || this.#closed) return;
    void this.#catalog.warnUnmatched(this.#policy());
    this.#emit({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    const caps = isUp && up !== undefined ? up.capabilities : { prompts: {}, resources: {} };
    if (caps.prompts !== undefined) this.#emit({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' });
    if (caps.resources !== undefined) this.#emit({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' });
  }
}
