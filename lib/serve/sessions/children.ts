/*
 * What a session talks to: the server's child process (one stdio server served), or a Gateway in front of several
 * servers (each session's own, one for modern requests). Children are made by a Children factory built once, before
 * any session, from what serve was given; each child is watched (its stderr, bad frames and trace logged, its
 * requests tapped, its start and end published) by listening to it, never by changing it.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import type { AuthOptions } from '../../client/auth/types.js';
import { isStdioServer, type RemoteServerConfig, type ServerConfig, type StdioServerConfig } from '../../client/config.js';
import { connect } from '../../client/connect.js';
import { connectOver, type FrameTrace } from '../../client/connection.js';
import { StdioChannel } from '../../client/stdio.js';
import { type FrameError, frameProblem, printableJson, redactMessage, safeLine } from '../../errors.js';
import { tryParse } from '../../framings/json.js';
import { Gateway, type GatewayOptions } from '../../gateway/gateway.js';
import { GatewaySessions, type GatewayView } from '../../gateway/sessions.js';
import { prefixClashes } from '../../gateway/names.js';
import type { Policy } from '../../gateway/policy.js';
import { changesOf, sameEntry, type ServerChanges, UpstreamHealth, type UpstreamOpener, type UpstreamState } from '../../gateway/upstream.js';
import type { Logger } from '../../log.js';
import { type Caller, tokenOf } from '../../protocol/caller.js';
import type { ExchangeTarget, TokenExchange } from '../../gateway/exchange.js';
import { ConnectionError } from '../../client/errors.js';
import { LATEST_LEGACY_PROTOCOL_VERSION } from '../../protocol/versions.js';
import { CallerGateways } from './callers.js';
import type { RequestTap, Telemetry } from '../observe/index.js';

/**
 * What a session's messages go to: the server's child process, a gateway in front of several servers, or a
 * session's view of the gateway that every session shares.
 */
export type ServedChild = StdioChannel | Gateway | GatewayView | CallerGateways;

/** The label of the child (or gateway) shared by modern requests. */
export const MODERN_LABEL = 'modern requests';
/** The label of a signed-in caller's gateway for its modern requests (see callers.ts). */
const CALLER_LABEL = 'a caller’s modern requests';

/** The session's " (server pid n)" for the log; nothing for a gateway, whose servers have pids of their own. */
export function pidNote(child: ServedChild): string {
  return child.pid === undefined ? '' : ` (server pid ${child.pid})`;
}

/** Who is told of each child: its log, and serve's events. */
export interface Watchers {
  telemetry: Telemetry;
  requests: RequestTap;
  /** Every message logged (redacted). */
  trace: boolean;
}

/** Makes the children of sessions. */
export interface Children {
  /** The one stdio server served; undefined for a gateway. */
  readonly entry: StdioServerConfig | undefined;
  /** For a gateway: each upstream's last known state (for /healthz). */
  readonly health: UpstreamHealth | undefined;
  /** Starts the child of a session labelled `label` (for `caller`, whom a gateway serves), its lines to `log`. */
  start(label: string, log: Logger, caller?: Caller): ServedChild;
  /** Closes what the sessions share (the shared gateway and its servers), when serve closes. */
  close(): Promise<void>;
  /** The policy was replaced: the shared gateway warns of a rule that matches nothing (see Catalog.warnUnmatched). */
  policyChanged(): void;
  /**
   * A reload: the servers are now `servers` (see Gateway.reconfigure); what changed, by name. Rejects, the
   * servers in force kept, when it cannot take them (one server served without a gateway takes only its own,
   * changed, for the sessions to come).
   */
  reconfigure(servers: ReadonlyArray<[string, ServerConfig]>): Promise<ServerChanges>;
  /**
   * A session's message came from `caller` (its host may have refreshed its token): a server its gateway reaches
   * with each caller's own token is asked for with the latest.
   */
  called?(child: ServedChild, caller: Caller | undefined): void;
  /**
   * Messages of servers behind the modern requests' child that could be attributed to no call, and were dropped
   * (those the modern child counts itself are not in it).
   */
  readonly dropped?: number;
}

/** Settings of the stdio children. */
interface ChildSettings {
  /** The server's name in logs and errors. */
  name: string;
  inheritEnv: boolean;
  shutdownGraceMs: number;
}

/** Children of one stdio server, each a process of its own. */
export function stdioChildren(first: StdioServerConfig, settings: ChildSettings, watchers: Watchers): Children {
  let entry = first;
  return {
    get entry() {
      return entry;
    },
    health: undefined,
    start(label, log) {
      const channel = new StdioChannel(entry, settings);
      watchers.requests.watch(channel, label === MODERN_LABEL ? 'modern' : 'legacy', label);
      watchChild(channel, channel.started, watchers.telemetry);
      channel.on('stderr', (line: string) => log.info('server.stderr', `server stderr: ${safeLine(line)}`, { line: safeLine(line) }));
      channel.on('invalid', (err: FrameError) => {
        watchers.telemetry.publish('frame:bad', { from: 'server' });
        log.warn('server.bad_frame', `skipped a bad frame from the server: ${frameProblem(err)}`, { code: err.code });
      });
      if (watchers.trace) {
        channel.on('wire', (direction: string, text: string) => {
          log.info('server.frame', `${direction === 'send' ? '->' : '<-'} ${printableJson(redactMessage(tryParse(text)))}`, { direction });
        });
      }
      return channel;
    },
    // Every child is a session's own, closed with it.
    close: () => Promise.resolve(),
    // One server served as it is has no policy.
    policyChanged: () => undefined,
    // Its sessions each have a child of their own: a changed command is the next sessions'.
    reconfigure(servers) {
      const [only] = servers;
      if (servers.length !== 1 || only === undefined || !isStdioServer(only[1]))
        return Promise.reject(
          new TypeError(`serve offers the one stdio server "${settings.name}" without a gateway: restart it to serve other servers`),
        );
      const changed = sameEntry(entry, only[1]) ? [] : [only[0]];
      entry = only[1] as StdioServerConfig;
      return Promise.resolve({ added: [], removed: [], changed });
    },
  };
}

/**
 * Counts a child process in and out: started once it runs (`started`), ended closed (by serve) or died (on its
 * own) at `event` (a channel's 'close', a Connection's 'exit'), told apart by whether close() was asked for.
 */
function watchChild(
  child: { readonly closing: boolean; on(event: string, listener: () => void): unknown },
  started: Promise<unknown>,
  telemetry: Telemetry,
  event = 'close',
): void {
  if (!telemetry.listened('child:start') && !telemetry.listened('child:end')) return;
  let running = false;
  started.then(
    () => {
      running = true;
      telemetry.publish('child:start', {});
    },
    () => undefined,
  );
  child.on(event, () => {
    if (running) telemetry.publish('child:end', { how: child.closing ? 'closed' : 'died' });
    running = false;
  });
}

/** The gateway options serve passes on as given (undefined: the gateway's default). */
type PassedOn =
  | 'separator'
  | 'prefix'
  | 'prefixOne'
  | 'allowTools'
  | 'denyTools'
  | 'allowPrompts'
  | 'denyPrompts'
  | 'listTimeoutMs'
  | 'callTimeoutMs'
  | 'maxPendingPerUpstream'
  | 'forwardClaims'
  | 'statePrefix'
  | 'toolSearch';

/** What a gateway's children are made with: ServeOptions' gateway settings. */
export interface GatewaySettings extends Readonly<{ [K in PassedOn]: GatewayOptions[K] | undefined }> {
  name: string;
  startTimeoutMs: number | undefined;
  inheritEnv: boolean;
  shutdownGraceMs: number;
  tracing: boolean;
  /** Who may call what (reloaded in place). */
  policy: { readonly current: Policy | undefined };
  /** The sign-in of a remote server that asks for one. */
  upstreamAuth: ((name: string, entry: RemoteServerConfig) => AuthOptions | undefined) | undefined;
  /**
   * Servers that keep state per client: given, every session of the initialize era gets a gateway and servers of
   * its own (as modern requests share one). Otherwise every session shares one gateway, each server running once.
   */
  isolate: readonly string[] | undefined;
  /** How each caller's token is exchanged for a server whose entry's auth has mode exchange; none without sign-in. */
  exchange: TokenExchange | undefined;
}

/** What the exchange asks for a server reached with each caller's own token (its auth's mode `exchange`), or undefined. */
function exchanged(entry: ServerConfig): ExchangeTarget | undefined {
  if (isStdioServer(entry) || entry.type === 'socket' || entry.auth?.mode !== 'exchange') return undefined;
  return { resource: entry.url, audience: entry.auth.audience, scope: entry.auth.scope };
}

/** Servers reached with each caller's own token need the exchange (serve signs people in): refused otherwise, naming the first. */
function checkExchanges(servers: ReadonlyArray<readonly [string, ServerConfig]>, exchange: TokenExchange | undefined): void {
  const [first] = servers.filter(([, entry]) => exchanged(entry) !== undefined);
  if (first !== undefined && exchange === undefined)
    throw Object.assign(
      new TypeError(
        `server "${first[0]}" has auth mode "exchange": serve exchanges each caller's token at its authorization server's token endpoint, so it needs --auth-issuer, and MCP_FRAME_EXCHANGE_CLIENT_ID and MCP_FRAME_EXCHANGE_CLIENT_SECRET set`,
      ),
      { code: 'CONFIG' },
    );
}

/**
 * With `isolate`: the upstream, in the gateway of each session (and of modern requests), that is the servers every
 * session shares, through a gateway of their own (a view of it per session, as without `isolate`). Its names are
 * exposed as that gateway gives them (a transparent upstream); the entry only marks it.
 */
const SHARED = 'mcp-frame:shared-servers';
const SHARED_ENTRY: ServerConfig = { command: 'mcp-frame', args: ['(the servers every session shares)'] };

/** The options of the gateway every session shares behind the gateways of isolated sessions: policy, filters, claims and search are theirs. */
const INNER: Partial<GatewayOptions> = { allowTools: [], denyTools: [], allowPrompts: [], denyPrompts: [], forwardClaims: [], prefixOne: true };

/**
 * Children that are gateways in front of `servers`, each with its own upstreams. Refuses (an Error of code
 * NAME_CLASH) servers whose prefixed names can be one, and with prefix `never`, starts the servers once now and
 * refuses a name two of them offer, both servers named.
 */
export async function gatewayChildren(
  servers: Array<[string, ServerConfig]>,
  settings: GatewaySettings,
  watchers: Watchers,
  log: Logger,
): Promise<Children> {
  refuseClashingPrefixes(servers, settings);
  checkExchanges(servers, settings.exchange);
  const health = new UpstreamHealth(servers.map(([name]) => name));
  await noteUnstartable(servers, health);
  const children = new GatewayChildren(servers, settings, watchers, log, health);
  if (settings.prefix === 'never' && servers.length > 1) await children.refuseSharedNames(servers);
  return children;
}

/**
 * Each server runs once for every session of both eras, behind one gateway that each session sees through a view
 * of its own (GatewaySessions). A server named in `isolate` instead runs once per session of the initialize era
 * (and once for the modern requests): each such session gets a gateway of its own in front of its isolated servers
 * and of the shared gateway (through a view, as one transparent upstream), so that the others still run once.
 */
class GatewayChildren implements Children {
  readonly entry = undefined;
  readonly health: UpstreamHealth;
  #current: ReadonlyArray<[string, ServerConfig]>;
  readonly #settings: GatewaySettings;
  readonly #watchers: Watchers;
  readonly #log: Logger;
  /** The options passed on as given; what was not given is left out, so that the gateway's own default applies. */
  readonly #options: Partial<GatewayOptions> & { name: string };
  readonly #isolated: Set<string>;
  /** Some servers are a session's own (isolated, or reached with each caller's exchanged token): fixed at start. */
  readonly #splitting: boolean;
  /** The gateway in front of the shared servers (made at the first that needs it, again after it closed), and its sessions. */
  #pool: { gateway: Gateway; sessions: GatewaySessions } | undefined;
  /** With `isolate`: the gateways in front of isolated servers, while open (a reload changes their servers too). */
  readonly #own = new Set<Gateway>();
  /**
   * What a session's own gateway says of its servers' health: a server reached with each caller's own token is
   * left out (its caller's refused exchange is no state of the server's: one caller must not take it, nor the
   * replica, out of /healthz).
   */
  readonly #sessionHealth: UpstreamHealth;
  /** Each gateway's latest caller (see called). */
  readonly #seen = new WeakMap<Gateway, { caller: Caller | undefined }>();
  /** With `isolate`: the one of them for modern requests. */
  #modern: Gateway | undefined;
  /** Some servers are reached with each caller's exchanged token: fixed at start (see callers.ts). */
  readonly #exchanging: boolean;
  /** Then: each signed-in caller's gateway for its modern requests, and the sessions they have of `#modern`. */
  #callers: { gateways: CallerGateways; sessions: GatewaySessions } | undefined;

  constructor(servers: Array<[string, ServerConfig]>, settings: GatewaySettings, watchers: Watchers, log: Logger, health: UpstreamHealth) {
    this.#current = servers;
    this.#settings = settings;
    this.#watchers = watchers;
    this.#log = log;
    this.health = health;
    const { startTimeoutMs: _s, inheritEnv: _i, shutdownGraceMs: _g, policy: _p, upstreamAuth: _u, isolate, exchange: _e, ...given } = settings;
    this.#options = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as unknown as Partial<GatewayOptions> & {
      name: string;
    };
    this.#isolated = new Set(isolate ?? []);
    this.#sessionHealth = new PartHealth(health, (name) => this.#current.some(([n, entry]) => n === name && exchanged(entry) !== undefined));
    this.#splitting = servers.some(([name, entry]) => this.#isOwn(name, entry));
    this.#exchanging = servers.some(([, entry]) => exchanged(entry) !== undefined);
  }

  #make(
    label: string,
    caller: Caller | undefined,
    lines: Logger,
    upstreams = this.#current,
    more: Partial<GatewayOptions> = {},
    behind = (): GatewaySessions => this.#inner().sessions,
  ): Gateway {
    const modern = label === MODERN_LABEL || label === CALLER_LABEL;
    const { startTimeoutMs, inheritEnv, shutdownGraceMs, upstreamAuth, policy } = this.#settings;
    const { toolSearch: _, ...searchless } = this.#options;
    const telemetry = this.#watchers.telemetry;
    // Who the session's messages come from, latest first: a host that refreshed its token presents the new one.
    const seen = { caller };
    const gateway = new Gateway({
      // Tool search is the outermost gateway's: the one in front of the shared servers has none, nor (with servers
      // reached by exchange) the modern one that the callers' gateways stand in front of.
      ...(more === INNER || (label === MODERN_LABEL && this.#exchanging) ? searchless : this.#options),
      ...(caller === undefined ? {} : { caller }),
      // A session's own gateway (isolated) names its session in the audit trail.
      ...(modern || label === 'start-up check' || more === INNER ? {} : { session: label }),
      // The gateway for modern requests serves every modern caller (and the one behind isolated sessions, every
      // session): it attributes, or refuses, never guesses.
      shared: modern || more === INNER,
      observer: {
        upstreamRequest: (r) => telemetry.publish('upstream:request', r),
        upstreamRestart: (upstream) => telemetry.publish('upstream:restart', { upstream }),
        refused: (r) => telemetry.publish('gateway:refused', r),
      },
      policy: more === INNER ? () => undefined : () => policy.current,
      upstreams,
      open: (name, entry, how) =>
        name === SHARED
          ? connectOver(behind().open(label, caller), {
              name,
              protocolVersion: LATEST_LEGACY_PROTOCOL_VERSION,
              elicitationDefaults: false,
              ...how,
            })
          : opener(
              { inheritEnv, shutdownGraceMs, startTimeoutMs, upstreamAuth },
              this.#watchers,
              lines,
              this.#bearer(name, entry, seen),
            )(name, entry, how),
      ...(startTimeoutMs === undefined ? {} : { startTimeoutMs }),
      health: more === INNER || label === MODERN_LABEL || label === 'start-up check' ? this.health : this.#sessionHealth,
      logger: lines,
      ...more,
    });
    this.#seen.set(gateway, seen);
    return gateway;
  }

  /** With isolated servers: what the gateway of the shared ones behind them dropped (the one for modern requests counts its own). */
  get dropped(): number {
    return this.#splitting ? (this.#pool?.gateway.dropped ?? 0) : 0;
  }

  called(child: ServedChild, caller: Caller | undefined): void {
    const seen = child instanceof Gateway ? this.#seen.get(child) : undefined;
    if (seen !== undefined && tokenOf(caller) !== undefined) seen.caller = caller;
  }

  /** A server each session has its own of: one isolated, or one reached with each caller's own (exchanged) token. */
  #isOwn(name: string, entry: ServerConfig): boolean {
    return this.#isolated.has(name) || exchanged(entry) !== undefined;
  }

  /** For a server reached with each caller's own token: that of `caller`, exchanged for one meant for the server (see gateway/exchange.ts). */
  #bearer(name: string, entry: ServerConfig, seen: { caller: Caller | undefined }): (() => Promise<string>) | undefined {
    const target = exchanged(entry);
    const exchange = this.#settings.exchange;
    if (target === undefined || exchange === undefined) return undefined;
    return () => {
      const token = tokenOf(seen.caller);
      return token === undefined
        ? Promise.reject(
            new ConnectionError('AUTH_REQUIRED', `server "${name}" is reached with each caller's own token: this session has no signed-in caller`),
          )
        : exchange.tokenFor(token, target).catch((err: Error) => {
            throw new ConnectionError('AUTH_REQUIRED', `server "${name}": ${err.message}`);
          });
    };
  }

  /** The servers every session shares: all of them, or those not isolated. */
  #sharedOf(all: ReadonlyArray<[string, ServerConfig]>): Array<[string, ServerConfig]> {
    return all.filter(([name, entry]) => !this.#isOwn(name, entry));
  }

  /**
   * A gateway's servers in front of isolated ones: they, and the shared ones (when there are any) through a view.
   * The modern requests' gateway has no caller of its own to exchange a token for: it leaves such servers to the
   * callers' gateways in front of it (see callers.ts).
   */
  #ownOf(all: ReadonlyArray<[string, ServerConfig]>, modern = false): Array<[string, ServerConfig]> {
    const shared: Array<[string, ServerConfig]> = this.#sharedOf(all).length > 0 ? [[SHARED, SHARED_ENTRY]] : [];
    return [...all.filter(([name, entry]) => this.#isOwn(name, entry) && !(modern && exchanged(entry) !== undefined)), ...shared];
  }

  #inner(): { gateway: Gateway; sessions: GatewaySessions } {
    if (this.#pool !== undefined) return this.#pool;
    const lines = this.#log.child({ label: 'servers' }, 'servers');
    const plain = !this.#splitting;
    const gateway = plain
      ? this.#make(MODERN_LABEL, undefined, lines)
      : this.#make('servers', undefined, lines, this.#sharedOf(this.#current), INNER);
    const made = { gateway, sessions: new GatewaySessions(gateway) };
    if (plain) this.#watchers.requests.watch(gateway, 'modern', MODERN_LABEL);
    gateway.once('close', () => {
      if (this.#pool === made) this.#pool = undefined;
    });
    this.#pool = made;
    return made;
  }

  #ownGateway(label: string, caller: Caller | undefined, lines: Logger): Gateway {
    const gateway = this.#make(label, caller, lines, this.#ownOf(this.#current, label === MODERN_LABEL), { transparent: SHARED });
    this.#own.add(gateway);
    gateway.once('close', () => this.#own.delete(gateway));
    this.#watchers.requests.watch(gateway, label === MODERN_LABEL ? 'modern' : 'legacy', label);
    return gateway;
  }

  start(label: string, lines: Logger, caller?: Caller): ServedChild {
    if (this.#exchanging && label === MODERN_LABEL) return this.#callerGateways();
    if (this.#splitting && label === MODERN_LABEL) return this.#modernGateway();
    if (this.#splitting) return this.#ownGateway(label, caller, lines);
    const { gateway, sessions } = this.#inner();
    if (label === MODERN_LABEL) return gateway;
    const view = sessions.open(label, caller);
    this.#watchers.requests.watch(view, 'legacy', label, gateway);
    return view;
  }

  /** The gateway (in front of isolated servers and the shared ones) every modern request shares. */
  #modernGateway(): Gateway {
    if (this.#modern !== undefined) return this.#modern;
    const made = this.#ownGateway(MODERN_LABEL, undefined, this.#log.child({ label: 'servers' }, 'servers'));
    made.once('close', () => {
      if (this.#modern === made) this.#modern = undefined;
    });
    this.#modern = made;
    return made;
  }

  /**
   * With servers reached by exchange: the modern requests' child, one gateway per signed-in caller in front of
   * those servers and of a session of the modern gateway (see callers.ts).
   */
  #callerGateways(): CallerGateways {
    if (this.#callers !== undefined) return this.#callers.gateways;
    const shared = this.#modernGateway();
    const sessions = new GatewaySessions(shared);
    const lines = this.#log.child({ label: 'servers' }, 'servers');
    const gateways = new CallerGateways({
      name: MODERN_LABEL,
      shared,
      open: (caller) => this.#make(CALLER_LABEL, caller, lines, this.#callerOf(this.#current), { transparent: SHARED }, () => sessions),
      heard: (gateway, caller) => this.called(gateway, caller),
    });
    const made = { gateways, sessions };
    this.#watchers.requests.watch(gateways, 'modern', MODERN_LABEL);
    gateways.once('close', () => {
      if (this.#callers === made) this.#callers = undefined;
    });
    this.#callers = made;
    return gateways;
  }

  /** A caller's gateway's servers: those reached with its exchanged token, and the modern gateway's (through a session). */
  #callerOf(all: ReadonlyArray<[string, ServerConfig]>): Array<[string, ServerConfig]> {
    return [...all.filter(([, entry]) => exchanged(entry) !== undefined), [SHARED, SHARED_ENTRY]];
  }

  async close(): Promise<void> {
    await this.#callers?.gateways.close();
    await this.#modern?.close();
    await this.#pool?.gateway.close();
  }

  policyChanged(): void {
    if (this.#callers !== undefined) return this.#callers.gateways.policyChanged();
    void (this.#modern ?? (this.#splitting ? undefined : this.#pool?.gateway))?.policyChanged();
  }

  async reconfigure(next: ReadonlyArray<[string, ServerConfig]>): Promise<ServerChanges> {
    if (next.length === 0) throw new TypeError('a gateway needs a server: the servers in force are kept');
    refuseClashingPrefixes(next, this.#settings);
    if (this.#settings.prefix === 'never' && next.length > 1) await this.refuseSharedNames(next);
    checkExchanges(next, this.#settings.exchange);
    const [own] = next.filter(
      ([name, entry]) => (!this.#splitting && this.#isOwn(name, entry)) || (!this.#exchanging && exchanged(entry) !== undefined),
    );
    if (own !== undefined)
      throw new TypeError(`server "${own[0]}" is a session's own (isolated, or reached with each caller's token): restart serve to add it`);
    const changes = changesOf(this.#current, next);
    this.#current = [...next];
    this.health.reset(next.map(([name]) => name));
    const started = next.filter(([name]) => changes.added.includes(name) || changes.changed.includes(name));
    await noteUnstartable(started, this.health);
    // Those gone close when their calls end: not waited for here.
    void this.#pool?.gateway.reconfigure(this.#splitting ? this.#sharedOf(this.#current) : this.#current);
    for (const gateway of this.#own) void gateway.reconfigure(this.#ownOf(this.#current, gateway === this.#modern));
    for (const gateway of this.#callers?.gateways.gateways ?? []) void gateway.reconfigure(this.#callerOf(this.#current));
    return changes;
  }

  /** With prefix `never`: the servers started once, and a name two of them offer refused (NAME_CLASH). */
  async refuseSharedNames(servers: ReadonlyArray<[string, ServerConfig]>): Promise<void> {
    const probe = this.#make('start-up check', undefined, this.#log.child({ label: 'start-up check' }, 'start-up check'), servers);
    try {
      await probe.start();
      const clashes = await probe.clashes();
      if (clashes.length > 0)
        throw Object.assign(new Error(`prefix never: names offered by two servers: ${clashes.join('; ')}`), { code: 'NAME_CLASH' });
    } finally {
      await probe.close();
    }
  }
}

/** A part of a serve's upstream health: what it is told of the servers `skip` names is not passed on. */
class PartHealth extends UpstreamHealth {
  readonly #whole: UpstreamHealth;
  readonly #skip: (name: string) => boolean;

  constructor(whole: UpstreamHealth, skip: (name: string) => boolean) {
    super([]);
    this.#whole = whole;
    this.#skip = skip;
  }

  override set(name: string, state: UpstreamState, why?: string): void {
    if (!this.#skip(name)) this.#whole.set(name, state, why);
  }

  override note(name: string, problem: string | undefined): void {
    if (!this.#skip(name)) this.#whole.note(name, problem);
  }
}

/** A server whose command cannot start is down from the start (for /healthz), before any session tries it. */
async function noteUnstartable(servers: ReadonlyArray<readonly [string, ServerConfig]>, health: UpstreamHealth): Promise<void> {
  for (const [name, entry] of servers) {
    if (!isStdioServer(entry)) continue;
    const missing = await commandProblem(entry);
    if (missing !== undefined) health.set(name, 'down', `cannot start ${JSON.stringify(entry.command)}: ${missing}`);
  }
}

/** Servers whose prefixed names can be one and the same (see prefixClashes): an Error of code NAME_CLASH. */
function refuseClashingPrefixes(servers: ReadonlyArray<readonly [string, ServerConfig]>, settings: GatewaySettings): void {
  const separator = settings.separator ?? '__';
  const [clash] =
    settings.prefix === 'never'
      ? []
      : prefixClashes(
          servers.map(([name]) => name),
          separator,
        );
  if (clash === undefined) return;
  const [a, b] = clash;
  const example = `${b}${separator}x`.startsWith(`${a}${separator}`) ? [a, b] : [b, a];
  const rest = `${example[1]}${separator}x`.slice(example[0]!.length + separator.length);
  throw Object.assign(
    new Error(
      `separator ${JSON.stringify(separator)}: servers "${a}" and "${b}" can expose one name (${example[1]}${separator}x is "${example[0]}"'s ${rest} and "${example[1]}"'s x): rename one, or choose another --separator`,
    ),
    { code: 'NAME_CLASH' },
  );
}

/** How a gateway reaches its servers: connect(), each child's stderr and bad frames logged under its name. */
function opener(
  settings: Pick<GatewaySettings, 'inheritEnv' | 'shutdownGraceMs' | 'startTimeoutMs' | 'upstreamAuth'>,
  watchers: Watchers,
  lines: Logger,
  bearer: (() => Promise<string>) | undefined,
): UpstreamOpener {
  return (name, entry, { capabilities, onSpawn }) => {
    const auth = isStdioServer(entry) || entry.type === 'socket' || bearer !== undefined ? undefined : settings.upstreamAuth?.(name, entry);
    return connect(entry, {
      name,
      capabilities,
      ...(bearer === undefined ? {} : { bearer }),
      elicitationDefaults: false,
      inheritEnv: settings.inheritEnv,
      shutdownGraceMs: settings.shutdownGraceMs,
      timeoutMs: Math.max(settings.startTimeoutMs ?? 10_000, 30_000),
      ...(auth === undefined ? {} : { auth }),
      onSpawn: (connection) => {
        const log = lines.child({ upstream: name }, `server "${name}"`);
        connection.on('stderr', (line: string) => log.info('server.stderr', `stderr: ${safeLine(line)}`, { line: safeLine(line) }));
        if (watchers.trace) {
          connection.on('frame', (f: FrameTrace) =>
            log.info('server.frame', `${f.direction === 'send' ? '->' : '<-'} ${f.preview}`, { direction: f.direction }),
          );
        }
        if (isStdioServer(entry)) watchChild(connection, Promise.resolve(), watchers.telemetry, 'exit');
        connection.on('invalid', (err: FrameError) => {
          watchers.telemetry.publish('frame:bad', { from: 'server' });
          log.warn('server.bad_frame', `sent a bad frame, skipped: ${frameProblem(err)}`, { code: err.code });
        });
        onSpawn(connection);
      },
    });
  };
}

/**
 * Why `command` cannot be started, or undefined when it can: a path that is not an executable file, or a name
 * found in no folder of PATH. (On Windows, where PATHEXT decides, it is left to the first session.)
 */
async function missingCommand(command: string, path: string, cwd: string): Promise<string | undefined> {
  if (process.platform === 'win32') return undefined;
  const executable = (file: string): Promise<boolean> =>
    access(file, constants.X_OK).then(
      () => stat(file).then((s) => s.isFile()),
      () => false,
    );
  if (command.includes('/')) return (await executable(resolve(cwd, command))) ? undefined : 'no executable file there';
  for (const dir of path.split(delimiter)) {
    if (dir !== '' && (await executable(join(resolve(cwd, dir), command)))) return undefined;
  }
  return 'command not found on PATH';
}

/** Why the server entry's command cannot be started (see missingCommand), with its own PATH and folder. */
export function commandProblem(entry: StdioServerConfig): Promise<string | undefined> {
  return missingCommand(entry.command, entry.env?.PATH ?? process.env.PATH ?? '', entry.cwd ?? process.cwd());
}
