/*
 * The HTTP side of `serve`: Streamable HTTP at /mcp, the deprecated HTTP+SSE transport at /sse and
 * /messages. Every request passes the guard first; each refusal gets the status the specification gives and
 * one log line.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LEGACY_PROTOCOL_VERSIONS } from '../../protocol/versions.js';
import { readCapped } from '../../protocol/body.js';
import { envelopeProblem, headerMismatch, isEnvelopeRequest, MODERN_ERRORS, MODERN_PROTOCOL_VERSIONS, metaVersion } from '../../protocol/modern.js';
import { safeLine } from '../../errors.js';
import { requestTarget } from '../../protocol/target.js';
import { decodeUtf8 } from '../../framings/bytes.js';
import { isObject, isRequest, type JsonRpcRequest, jsonRpcProblem } from '../../jsonrpc.js';
import { DEFAULT_MAX_DEPTH, problemOf, tryParse } from '../../framings/json.js';
import type { Policy } from '../../gateway/policy.js';
import { TASK_METHODS } from '../../gateway/tasks.js';
import type { Caller } from '../../protocol/caller.js';
import { Refusal } from '../../protocol/refusal.js';
import type { Authentication, ResourceServer } from '../identity/index.js';
import type { MetricsRegistry } from '../observe/index.js';
import {
  carriedCaller,
  incomingOf,
  isPeerKey,
  MayHaveRun,
  PEER_HEADER,
  PEER_REFUSED_HEADER,
  type ReplicaStore,
  StoreUnavailable,
  type TunnelRequest,
  type TunnelResponse,
  tunnelRequest,
} from '../replicas/index.js';
import {
  type Admitted,
  commandProblem,
  LegacySession,
  type ModernHub,
  pidNote,
  type ServeContext,
  type SessionTable,
  StreamableSession,
  shortId,
} from '../sessions/index.js';
import type { Guard } from './guard.js';
import { type CallLimits, type OverLimit, overLimit } from './rates.js';
import { CODES } from '../../protocol/codes.js';

const UNKNOWN_SESSION = 'unknown or ended session (start a new one with initialize)';

/**
 * The HTTP trace headers (W3C traceparent, tracestate, baggage) into the `_meta` of each request that has no
 * traceparent of its own, so that a trace begun by an HTTP client goes on to the server in the message.
 */
function withTraceHeaders(messages: unknown[], req: IncomingMessage): void {
  const traceparent = req.headers.traceparent;
  if (typeof traceparent !== 'string' || !/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(traceparent)) return;
  for (const msg of messages) {
    if (!isRequest(msg)) continue;
    const params: Record<string, unknown> = isObject(msg.params) ? msg.params : {};
    const meta: Record<string, unknown> = isObject(params._meta) ? params._meta : {};
    if (typeof meta.traceparent === 'string') continue;
    meta.traceparent = traceparent;
    for (const key of ['tracestate', 'baggage'] as const) {
      const value = req.headers[key];
      if (typeof value === 'string') meta[key] = value;
    }
    params._meta = meta;
    (msg as { params?: unknown }).params = params;
  }
}

const refuse = (status: number, reason: string, headers?: Record<string, string>): never => {
  throw new Refusal(status, reason, headers === undefined ? {} : { headers });
};

function accepts(req: IncomingMessage, ...types: string[]): boolean {
  const accept = (req.headers.accept ?? '').toLowerCase();
  if (accept.includes('*/*')) return true;
  return types.every((type) => accept.includes(type) || accept.includes(`${type.split('/')[0]}/*`));
}

function requireJsonBody(req: IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') refuse(415, `Content-Type must be application/json, got ${JSON.stringify(type.slice(0, 40))}`);
}

/** The body, read no further than `limit` bytes: past it, 413 and the rest is not read. */
async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) throw new Refusal(413, `the body is ${declared} bytes, over the limit of ${limit}`);
  const { body, over } = await readCapped(req, limit);
  if (over) throw new Refusal(413, `the body is over the limit of ${limit} bytes`);
  // Replacing bad bytes with U+FFFD would change the message (two keys could become one): refused, as the
  // decoders refuse them.
  const text = decodeUtf8(body, 0, body.length);
  if (text === undefined) throw new Refusal(400, 'the body is not valid UTF-8', { code: CODES.parseError });
  return text;
}

/** What a refused body may still be read for, so that its client gets to read the answer instead of a reset. */
const DRAIN_BYTES = 16 * 1024 * 1024;
const DRAIN_MS = 5000;

/**
 * Reads and discards the rest of a refused body, up to DRAIN_BYTES or DRAIN_MS; past either the connection is
 * destroyed. Closing at once would reset the connection while the client still sends, and a reset drops the
 * answer from the client's receive buffer before it reads it (curl happens to see it; most clients do not).
 */
function drainOrClose(req: IncomingMessage): void {
  let left = DRAIN_BYTES;
  const stop = (): void => {
    clearTimeout(timer);
    req.destroy();
  };
  const timer = setTimeout(stop, DRAIN_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) stop();
  });
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/** The body's messages (a batch as its elements), or 400 with a JSON-RPC parse or shape error. */
function parseMessages(body: string): unknown[] {
  const parsed = tryParse(body);
  const problem = problemOf(parsed, body, DEFAULT_MAX_DEPTH);
  if (problem !== undefined) throw new Refusal(400, `the body ${problem.reason}`, { code: CODES.parseError });
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  if (messages.length === 0) refuse(400, 'the body is an empty batch');
  for (const msg of messages) {
    const shape = jsonRpcProblem(msg);
    if (shape !== undefined) refuse(400, `not a JSON-RPC message: ${shape}`);
  }
  return messages;
}

const VERSIONS = [...MODERN_PROTOCOL_VERSIONS, ...LEGACY_PROTOCOL_VERSIONS];

/** The revision's UnsupportedProtocolVersionError: 400, -32022, with what is supported and what was asked. */
function unsupported(requested: string, supported: readonly string[], where: string): never {
  throw new Refusal(400, `unsupported protocol version ${JSON.stringify(requested.slice(0, 40))} in ${where} (supported: ${supported.join(', ')})`, {
    code: MODERN_ERRORS.unsupportedProtocolVersion,
    data: { supported, requested: requested.slice(0, 100) },
  });
}

function checkProtocolVersion(req: IncomingMessage): void {
  const version = req.headers['mcp-protocol-version'];
  if (version !== undefined && !VERSIONS.includes(version as string)) unsupported(String(version), VERSIONS, 'the MCP-Protocol-Version header');
}

/**
 * The request of a modern POST, or undefined: one request written the modern way (`_meta` names a protocol
 * version, or the MCP-Protocol-Version header a modern revision; see isEnvelopeRequest). Its envelope must be
 * whole (-32602), its headers must match its body (-32020) and its version be one serve speaks (-32022),
 * each a 400 (the revision's statuses), checked here for every child, modern or translated.
 */
function modernRequest(messages: unknown[], req: IncomingMessage): JsonRpcRequest | undefined {
  const [msg] = messages;
  if (messages.length !== 1 || !isRequest(msg) || !isEnvelopeRequest(msg, req.headers['mcp-protocol-version'])) return undefined;
  const problem = envelopeProblem(msg);
  if (problem !== undefined) throw new Refusal(400, `invalid request envelope: ${problem}`, { code: CODES.invalidParams, id: msg.id });
  const mismatch = headerMismatch(msg as unknown as Record<string, unknown>, req.headers);
  if (mismatch !== undefined) throw new Refusal(400, `header mismatch: ${mismatch}`, { code: MODERN_ERRORS.headerMismatch, id: msg.id });
  const version = metaVersion(msg)!;
  if (!MODERN_PROTOCOL_VERSIONS.includes(version)) unsupported(version, MODERN_PROTOCOL_VERSIONS, '_meta');
  return msg;
}

/** The request headers a page may send (besides the simple ones): what MCP's transports use. */
const CORS_REQUEST_HEADERS = ['content-type', 'authorization', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];

/** On every response to a page of an allowed origin: it may read the answer, and the session headers. */
function corsHeaders(res: ServerResponse, origin: string): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Expose-Headers', 'Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, WWW-Authenticate');
  res.setHeader('Vary', 'Origin');
}

/**
 * A CORS preflight (the guard's Origin check passed when the allow headers are set): 204 with the methods and
 * headers MCP needs, the Mcp-Param-* headers of the 2026-07-28 revision among them. No token is asked: a
 * browser never sends one on a preflight.
 */
function preflight(req: IncomingMessage, res: ServerResponse, guard: Guard): void {
  const origin = req.headers.origin!;
  if (!guard.originAllowed(origin)) refuse(403, `Origin ${JSON.stringify(origin.slice(0, 60))} is not allowed (add it with --allow-origin)`);
  const asked = String(req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  const headers = [...CORS_REQUEST_HEADERS, ...asked.filter((h) => /^mcp-param-[a-z0-9-]{1,64}$/.test(h))];
  res
    .writeHead(204, {
      'Access-Control-Allow-Methods': 'GET, POST, DELETE, OPTIONS',
      'Access-Control-Allow-Headers': [...new Set(headers)].join(', '),
      'Access-Control-Max-Age': '600',
    })
    .end();
}

/** Why this replica cannot take sessions now (for /healthz), or undefined. */
async function healthProblem(ctx: ServeContext, store: ReplicaStore | undefined): Promise<string | undefined> {
  if (ctx.lifecycle.closing) return 'shutting down';
  const entry = ctx.children.entry;
  if (entry === undefined) {
    // A gateway is down only when every server behind it is; some down is degraded (see #health).
    const report = Object.entries(ctx.children.health?.report() ?? {});
    if (report.length > 0 && report.every(([, s]) => s.state === 'down')) return 'every server behind the gateway is down';
    return store?.problem();
  }
  const missing = await commandProblem(entry);
  if (missing !== undefined) return `cannot start ${JSON.stringify(entry.command)}: ${missing}`;
  const failure = ctx.lifecycle.startFailure;
  if (failure !== undefined) return `the last server process failed to start: ${safeLine(failure)}`;
  return store?.problem();
}

/** What the front hands requests to, besides the context: each made before the front. */
export interface FrontParts {
  guard: Guard;
  sessions: SessionTable;
  modern: ModernHub;
  /** serve as an OAuth resource server: each request's caller from its token. */
  identity: ResourceServer | undefined;
  /** Who may call what (reloaded in place), for a step-up. */
  policy: { readonly current: Policy | undefined } | undefined;
  /** With metrics: the registry /metrics answers from. */
  metrics: MetricsRegistry | undefined;
  /** Rate limits on tools/call, per caller. */
  limits: CallLimits;
}

export class HttpFront {
  readonly #ctx: ServeContext;
  readonly #guard: Guard;
  readonly #sessions: SessionTable;
  readonly #modern: ModernHub;
  readonly #identity: ResourceServer | undefined;
  readonly #policy: { readonly current: Policy | undefined } | undefined;
  readonly #metrics: MetricsRegistry | undefined;
  readonly #limits: CallLimits;

  constructor(ctx: ServeContext, parts: FrontParts) {
    this.#ctx = ctx;
    this.#guard = parts.guard;
    this.#sessions = parts.sessions;
    this.#modern = parts.modern;
    this.#identity = parts.identity;
    this.#policy = parts.policy;
    this.#metrics = parts.metrics;
    this.#limits = parts.limits;
  }

  /** The http.Server's request listener. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    // A client that resets its connection makes the response emit 'error'; that must never end the process.
    res.on('error', () => undefined);
    req.on('error', () => undefined);
    // Another replica forwarding a request for a session of this one, over HTTP (--advertise-url): taken as one
    // carried through the store, once the peer key proves a replica sent it.
    const peer = req.headers[PEER_HEADER];
    if (peer !== undefined && !isPeerKey(peer, this.#sessions.store?.peerKey)) {
      const reason = 'the peer key is not this service’s (a replica forwards with the key the store gives)';
      return this.#refuse(req, res, new Refusal(403, reason, { headers: { [PEER_REFUSED_HEADER]: '1' } }));
    }
    this.#dispatch(req, res, peer !== undefined);
  }

  /** A request another replica carried here, for a session of this one: the guard passed there. */
  forwarded(request: TunnelRequest, res: TunnelResponse): void {
    this.#dispatch(incomingOf(request), res.asResponse, true);
  }

  #dispatch(req: IncomingMessage, res: ServerResponse, forwarded: boolean): void {
    this.#route(req, res, forwarded).catch((err: unknown) => {
      const reply =
        err instanceof Refusal
          ? err
          : err instanceof StoreUnavailable
            ? new Refusal(503, err.message)
            : err instanceof MayHaveRun
              ? new Refusal(502, err.message)
              : new Refusal(500, safeLine((err as Error).message));
      try {
        this.#refuse(req, res, reply);
      } catch {
        // Nothing a peer sends may end the process: a refusal that cannot be written ends the connection.
        res.destroy();
      }
    });
  }

  /**
   * A request through the front's steps, in order: its target (a path, or 400); the guard (Host, Origin, token),
   * which answers /healthz and a CORS preflight itself and passes a request another replica carried (the guard
   * passed there); identity (the caller, from the token, for the endpoints that take one); the endpoint.
   */
  async #route(req: IncomingMessage, res: ServerResponse, forwarded: boolean): Promise<void> {
    const path = this.#target(req);
    if (!forwarded && (await this.#guarded(req, res, path))) return;
    const rs = this.#identity;
    if (rs?.metadataPaths.includes(path)) return this.#metadata(req, res, rs);
    const caller = await this.#identify(req, path, forwarded);
    return this.#endpoint(req, res, path, forwarded, caller);
  }

  /** The target step: the request's path; a target that is not one is nothing this server can route, whoever sends it. */
  #target(req: IncomingMessage): string {
    const target = requestTarget(req.url);
    if (target === undefined) refuse(400, `the request-target is not a path (origin form: ${this.#ctx.paths.mcp})`);
    return target!.path;
  }

  /** The guard step: true when the request was answered here (/healthz, a preflight); a refusal is thrown. */
  async #guarded(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> {
    // For a balancer: no token, and no Host check (it probes the address, under whatever name).
    if (path === '/healthz') {
      await this.#health(req, res);
      return true;
    }
    const origin = req.headers.origin;
    if (origin !== undefined && this.#guard.originAllowed(origin)) corsHeaders(res, origin);
    if (req.method === 'OPTIONS' && origin !== undefined && req.headers['access-control-request-method'] !== undefined) {
      preflight(req, res, this.#guard);
      return true;
    }
    const refusal = this.#guard.check(req);
    if (refusal?.status === 401)
      this.#ctx.telemetry.publish('auth:refused', { reason: req.headers.authorization === undefined ? 'missing' : 'invalid' });
    if (refusal !== undefined) throw refusal;
    return false;
  }

  /** The identity step: the caller of a request to an endpoint that takes one (see #caller), else nobody. */
  #identify(req: IncomingMessage, path: string, forwarded: boolean): Promise<Caller | undefined> {
    const paths = this.#ctx.paths;
    return [paths.mcp, paths.sse, paths.messages, '/metrics'].includes(path) ? this.#caller(req, forwarded) : Promise.resolve(undefined);
  }

  /** The routing step: the endpoint of `path`, or 404 naming the endpoints there are. */
  #endpoint(req: IncomingMessage, res: ServerResponse, path: string, forwarded: boolean, caller: Caller | undefined): Promise<void> | void {
    const paths = this.#ctx.paths;
    if (path === '/metrics' && this.#metrics !== undefined) return this.#scrape(req, res, this.#metrics);
    if (path === paths.mcp) return this.#mcp(req, res, forwarded, caller);
    if (path === paths.sse) return this.#legacyStream(req, res, caller);
    if (path === paths.messages) return this.#legacyPost(req, res, forwarded, caller);
    return refuse(404, `no such path ${JSON.stringify(path.slice(0, 60))} (the MCP endpoint is ${paths.mcp}; the legacy SSE one ${paths.sse})`);
  }

  /** GET of the protected resource metadata (RFC 9728): no token asked, it says how to get one. */
  #metadata(req: IncomingMessage, res: ServerResponse, rs: ResourceServer): void {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      refuse(405, `method ${safeLine(req.method ?? '')} is not allowed here`, { Allow: 'GET, HEAD' });
    res
      .writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=300' })
      .end(req.method === 'HEAD' ? undefined : JSON.stringify(rs.metadata()));
  }

  /** GET /metrics: the Prometheus text (behind the Host, token and sign-in checks /mcp has). */
  async #scrape(req: IncomingMessage, res: ServerResponse, registry: MetricsRegistry): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      refuse(405, `method ${safeLine(req.method ?? '')} is not allowed on /metrics`, { Allow: 'GET, HEAD' });
    const text = await registry.metrics();
    res.writeHead(200, { 'Content-Type': registry.contentType, 'Cache-Control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text);
  }

  /**
   * The signed-in caller of a request (with a resource server), or 401/403 with the challenge. A request another
   * replica carried here names the caller that replica found (see tunnelRequest).
   */
  async #caller(req: IncomingMessage, forwarded: boolean): Promise<Caller | undefined> {
    const rs = this.#identity;
    if (rs === undefined) return undefined;
    if (forwarded) return carriedCaller(req.headers);
    const proof = req.headers.dpop;
    const dpop = { proof: typeof proof === 'string' ? proof : undefined, method: req.method ?? '', url: rs.htuOf(req.url ?? '/') };
    const verdict: Authentication = await rs.authenticate(req.headers.authorization, dpop);
    if ('caller' in verdict) return verdict.caller;
    this.#ctx.telemetry.publish('auth:refused', {
      reason: verdict.status === 403 ? 'insufficient_scope' : req.headers.authorization === undefined ? 'missing' : 'invalid',
    });
    throw new Refusal(verdict.status, verdict.reason, { headers: { 'WWW-Authenticate': verdict.challenge } });
  }

  /**
   * A tools/call or prompts/get the policy allows the caller only with more scopes: 403 insufficient_scope with
   * the scopes that would allow it, so that the client can ask for them. (One it does not allow at all goes on,
   * and the gateway answers it as an unknown tool.)
   */
  #stepUp(messages: unknown[], caller: Caller | undefined): void {
    const policy = this.#policy?.current;
    const rs = this.#identity;
    if (policy === undefined || rs === undefined || caller === undefined) return;
    for (const msg of messages) {
      if (!isRequest(msg) || (msg.method !== 'tools/call' && msg.method !== 'prompts/get') || !isObject(msg.params)) continue;
      const name = msg.params.name;
      if (typeof name !== 'string') continue;
      const decision = policy.decide(caller, msg.method === 'tools/call' ? 'tools' : 'prompts', name);
      if (decision.allowed || decision.scopes === undefined) continue;
      const up = rs.stepUp(caller, decision.scopes);
      this.#ctx.telemetry.publish('auth:refused', { reason: 'insufficient_scope' });
      throw new Refusal(403, `${up.reason} (${safeLine(name.slice(0, 80))})`, { headers: { 'WWW-Authenticate': up.challenge }, id: msg.id });
    }
  }

  /** A body's messages (see parseMessages); one that is none counts as a bad frame from a client. */
  #parsed(body: string): unknown[] {
    try {
      return parseMessages(body);
    } catch (err) {
      this.#ctx.telemetry.publish('frame:bad', { from: 'client' });
      throw err;
    }
  }

  #mcp(req: IncomingMessage, res: ServerResponse, forwarded: boolean, caller: Caller | undefined): Promise<void> | void {
    if (req.method === 'POST') return this.#post(req, res, forwarded, caller);
    if (req.method === 'GET') return this.#get(req, res, forwarded, caller);
    if (req.method === 'DELETE') return this.#delete(req, res, forwarded, caller);
    refuse(405, `method ${safeLine(req.method ?? '')} is not allowed on ${this.#ctx.paths.mcp}`, { Allow: 'GET, POST, DELETE' });
  }

  async #post(req: IncomingMessage, res: ServerResponse, forwarded: boolean, caller: Caller | undefined): Promise<void> {
    if (!accepts(req, 'application/json', 'text/event-stream')) refuse(406, 'Accept must list application/json and text/event-stream');
    requireJsonBody(req);
    const body = await readBody(req, this.#ctx.maxMessageBytes);
    this.#ctx.telemetry.publish('http:bytes', { direction: 'in', bytes: Buffer.byteLength(body) });
    const messages = this.#parsed(body);
    withTraceHeaders(messages, req);
    try {
      await this.#posted(req, res, forwarded, body, messages, caller);
    } catch (err) {
      // Once the body parsed, an error answer carries the id of the request it answers.
      const [only] = messages;
      if (err instanceof Refusal && err.id === undefined && messages.length === 1 && isRequest(only)) throw err.of(only.id);
      throw err;
    }
  }

  async #posted(
    req: IncomingMessage,
    res: ServerResponse,
    forwarded: boolean,
    body: string,
    messages: unknown[],
    caller: Caller | undefined,
  ): Promise<void> {
    // Modern requests carry no session: they go to the shared child, whatever session header they bear.
    const modern = modernRequest(messages, req);
    if (modern === undefined) checkProtocolVersion(req);
    this.#stepUp(messages, caller);
    // A call over a rate limit runs nothing (the replica that took the request counted it).
    const sessionId = req.headers['mcp-session-id'];
    const [over] =
      forwarded || this.#limits.none ? [] : await this.#overLimit(messages, caller, req, typeof sessionId === 'string' ? sessionId : undefined);
    if (over !== undefined) throw overLimit(over);
    if (modern !== undefined) {
      if (!forwarded && (await this.#carryRetry(modern, req, res, body, caller))) return;
      if (this.#modern.pending >= this.#ctx.maxPendingPerSession) refuse(429, `${this.#modern.pending} modern requests are in flight already`);
      return this.#modern.handle(modern, res, req.headers, caller).catch((err: Error) => refuse(502, err.message));
    }
    const initialize = messages.find((m) => isRequest(m) && m.method === 'initialize');
    const session = initialize === undefined ? await this.#session(req, res, forwarded, caller, body) : await this.#open(req, messages, caller);
    if (session === undefined) return;
    const refusal = session.refusePost(messages);
    if (refusal !== undefined) throw refusal;
    session.post(messages, res, caller);
  }

  async #get(req: IncomingMessage, res: ServerResponse, forwarded: boolean, caller: Caller | undefined): Promise<void> {
    if (!accepts(req, 'text/event-stream')) refuse(406, 'Accept must list text/event-stream');
    checkProtocolVersion(req);
    const session = await this.#session(req, res, forwarded, caller);
    if (session === undefined) return;
    const lastEventId = req.headers['last-event-id'];
    const refusal = session.get(res, typeof lastEventId === 'string' ? lastEventId : undefined);
    if (refusal !== undefined) throw refusal;
  }

  async #delete(req: IncomingMessage, res: ServerResponse, forwarded: boolean, caller: Caller | undefined): Promise<void> {
    const session = await this.#session(req, res, forwarded, caller);
    if (session === undefined) return;
    await session.close('the client ended the session');
    // Its room counts as free on every replica by the time the client hears it is gone.
    await this.#sessions.store?.release(session.id);
    res.writeHead(200).end();
  }

  /**
   * The session a request names, or 400 (none named) or 404 (not one of ours, or ended). With a store, a
   * session another replica owns gets the request carried there: undefined, the answer is on its way.
   */
  async #session(
    req: IncomingMessage,
    res: ServerResponse,
    forwarded: boolean,
    caller: Caller | undefined,
    body = '',
  ): Promise<StreamableSession | undefined> {
    const id = req.headers['mcp-session-id'];
    if (id === undefined) refuse(400, 'the Mcp-Session-Id header is required (start a session with initialize)');
    const session = this.#sessions.streamable.get(id as string);
    if (session !== undefined) {
      // Another caller's session is no session of theirs: the same 404 as for one that never was.
      if (session.owner !== caller?.subject) refuse(404, UNKNOWN_SESSION);
      return session;
    }
    await this.#carry(id as string, req, res, forwarded, body, caller);
    return undefined;
  }

  /** Carries a request for session `id` to the replica that owns it; 404 when none does. */
  async #carry(id: string, req: IncomingMessage, res: ServerResponse, forwarded: boolean, body: string, caller: Caller | undefined): Promise<void> {
    const store = this.#sessions.store;
    if (store === undefined || forwarded) refuse(404, UNKNOWN_SESSION);
    const owner = await store!.ownerOf(id);
    if (owner === undefined || owner === store!.replica) refuse(404, UNKNOWN_SESSION);
    this.#ctx.telemetry.publish('tunnel:request', {});
    if (!(await store!.forward(owner!, tunnelRequest(req, body, caller), res))) refuse(404, UNKNOWN_SESSION);
  }

  /**
   * A modern retry whose requestState another replica made is carried there: only that replica holds the call
   * its child is waiting to finish; so is a tasks request (the tasks extension) of a task a gateway of another
   * replica made (its id starts with that replica's, as a requestState does). True when carried; false to serve
   * it here (no store, this replica's own state, or its maker is gone, when the call starts over).
   */
  async #carryRetry(msg: JsonRpcRequest, req: IncomingMessage, res: ServerResponse, body: string, caller: Caller | undefined): Promise<boolean> {
    const store = this.#sessions.store;
    if (store === undefined) return false;
    const state = isObject(msg.params) ? msg.params[TASK_METHODS.has(msg.method) ? 'taskId' : 'requestState'] : undefined;
    const maker = typeof state === 'string' ? /^([0-9a-f-]{36})\./.exec(state)?.[1] : undefined;
    if (maker === undefined || maker === store.replica) return false;
    this.#ctx.telemetry.publish('tunnel:request', {});
    return store.forward(maker, tunnelRequest(req, body, caller), res);
  }

  /** A new session for an initialize request, its child started. */
  async #open(req: IncomingMessage, messages: unknown[], caller: Caller | undefined): Promise<StreamableSession> {
    if (req.headers['mcp-session-id'] !== undefined) refuse(400, 'initialize must not name a session');
    if (messages.length > 1) refuse(400, 'initialize must be sent alone');
    const { id, starting } = await this.#admit();
    const session = new StreamableSession(this.#ctx, id, (s, why) => this.#sessions.ended('streamable', s.id, s.log, why), caller);
    starting(session.channel);
    await this.#started(this.#sessions.streamable, session, '');
    return session;
  }

  /** Registers a new session and waits for its child to start; a child that cannot start is 502. */
  async #started<S extends StreamableSession | LegacySession>(table: Map<string, S>, session: S, how: string): Promise<void> {
    table.set(session.id, session);
    try {
      await session.channel.started;
    } catch (err) {
      table.delete(session.id);
      void this.#sessions.store?.release(session.id);
      this.#ctx.lifecycle.startFailure = (err as Error).message;
      refuse(502, (err as Error).message);
    }
    this.#ctx.lifecycle.startFailure = undefined;
    this.#ctx.telemetry.publish('session:open', { transport: how === '' ? 'streamable' : 'legacy' });
    session.log.info('session.started', `started${how}${pidNote(session.channel)}`, {
      transport: how === '' ? 'streamable' : 'sse',
      ...(session.channel.pid === undefined ? {} : { pid: session.channel.pid }),
    });
  }

  /** A new session's id and its turn to start, once there is room for it; 503 otherwise. */
  async #admit(): Promise<Admitted> {
    const room = await this.#sessions.admit();
    if (room instanceof Refusal) throw room;
    return room as Admitted;
  }

  async #legacyStream(req: IncomingMessage, res: ServerResponse, caller: Caller | undefined): Promise<void> {
    if (req.method !== 'GET') refuse(405, `method ${safeLine(req.method ?? '')} is not allowed on /sse`, { Allow: 'GET' });
    if (!accepts(req, 'text/event-stream')) refuse(406, 'Accept must list text/event-stream');
    const { id, starting } = await this.#admit();
    const session = new LegacySession(this.#ctx, id, (s, why) => this.#sessions.ended('legacy', s.id, s.log, why), caller);
    starting(session.channel);
    await this.#started(this.#sessions.legacy, session, ' over the legacy SSE transport');
    session.attach(res);
  }

  async #legacyPost(req: IncomingMessage, res: ServerResponse, forwarded: boolean, caller: Caller | undefined): Promise<void> {
    if (req.method !== 'POST') refuse(405, `method ${safeLine(req.method ?? '')} is not allowed on ${this.#ctx.paths.messages}`, { Allow: 'POST' });
    const id = requestTarget(req.url)?.query.get('sessionId') ?? null;
    if (id === null) refuse(400, 'the sessionId parameter is required');
    const session = this.#sessions.legacy.get(id!);
    if (session === undefined && (this.#sessions.store === undefined || forwarded)) refuse(404, 'unknown or ended session');
    if (session !== undefined && session.owner !== caller?.subject) refuse(404, 'unknown or ended session');
    requireJsonBody(req);
    const body = await readBody(req, this.#ctx.maxMessageBytes);
    const messages = parseMessages(body);
    this.#stepUp(messages, caller);
    // A call over a rate limit runs nothing, and its error goes on the stream; the rest of the POST goes on.
    const over = forwarded || this.#limits.none ? [] : await this.#overLimit(messages, caller, req, id!);
    const refused = new Set<unknown>(over.map((o) => o.request));
    const taken = messages.filter((msg) => !refused.has(msg));
    if (session === undefined) {
      if (over.length > 0) throw overLimit(over[0]!);
      return this.#carry(id!, req, res, forwarded, body, caller);
    }
    const requests = taken.filter(isRequest).length;
    if (session.pending + requests > this.#ctx.maxPendingPerSession) refuse(429, `the session has ${session.pending} requests in flight already`);
    for (const o of over) session.answer(overLimit(o).body());
    session.post(taken, caller);
    res.writeHead(202).end('Accepted');
  }

  /** The calls of `messages` over a rate limit of `caller`, each told to the audit trail as refused (rate). */
  async #overLimit(messages: unknown[], caller: Caller | undefined, req: IncomingMessage, session: string | undefined): Promise<OverLimit[]> {
    const over = await this.#limits.over(messages, caller, req.socket.remoteAddress);
    for (const { request } of over) {
      const name = isObject(request.params) && typeof request.params.name === 'string' ? request.params.name : '';
      const label = session === undefined ? undefined : `session ${shortId(session)}`;
      this.#ctx.telemetry.publish('gateway:refused', { method: 'tools/call', name, why: 'rate', caller, session: label });
    }
    return over;
  }

  /**
   * GET /healthz: 200 while this replica takes sessions, else 503 and why. A gateway's says each server's state,
   * and `degraded` (still 200) while some are down.
   */
  async #health(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      refuse(405, `method ${safeLine(req.method ?? '')} is not allowed on /healthz`, { Allow: 'GET, HEAD' });
    const problem = await healthProblem(this.#ctx, this.#sessions.store);
    const upstreams = this.#ctx.children.health;
    const status = problem !== undefined ? 'unavailable' : (upstreams?.down().length ?? 0) > 0 ? 'degraded' : 'ok';
    const body = JSON.stringify({
      status,
      ...(problem === undefined ? { sessions: this.#sessions.count() } : { reason: problem }),
      ...(upstreams === undefined ? {} : { servers: upstreams.report() }),
    });
    res
      .writeHead(problem === undefined ? 200 : 503, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' })
      .end(req.method === 'HEAD' ? undefined : body);
  }

  #refuse(req: IncomingMessage, res: ServerResponse, reply: Refusal): void {
    // The path alone: a query may carry a session id (the legacy endpoint's) or a token.
    const path = requestTarget(req.url)?.path ?? '(not a path)';
    const line = `${reply.status} ${safeLine(req.method ?? '')} ${safeLine(path.slice(0, 80))}: ${safeLine(reply.reason)}`;
    const fields = { status: reply.status, method: safeLine(req.method ?? ''), path: safeLine(path.slice(0, 80)) };
    // A refusal is the client's doing (4xx), news for the operator only when it is serve's (5xx).
    if (reply.status >= 500) this.#ctx.log.error('refused', line, fields);
    else this.#ctx.log.info('refused', line, fields);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = JSON.stringify(reply.body());
    res.writeHead(reply.status, { 'Content-Type': 'application/json', ...reply.headers }).end(body);
    // A body left unread (413) is drained within bounds, so that the client reads the answer.
    if (reply.status === 413) drainOrClose(req);
  }
}
