/*
 * The HTTP side of `serve`: Streamable HTTP at /mcp, the deprecated HTTP+SSE transport at /sse and
 * /messages. Every request passes the guard first; each refusal gets the status the specification gives and
 * one log line.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../client/connection.js';
import { readCapped } from '../client/remote.js';
import { headerMismatch, isModernVersion, MODERN_ERRORS, MODERN_PROTOCOL_VERSIONS, metaVersion } from '../client/modern.js';
import { safeLine } from '../errors.js';
import { decodeUtf8 } from '../framings/bytes.js';
import { isRequest, type JsonRpcRequest, jsonRpcProblem } from '../jsonrpc.js';
import { DEFAULT_MAX_DEPTH, problemOf, tryParse } from '../framings/json.js';
import { rpcError, SERVER_ERROR, type ServeContext } from './context.js';
import type { Guard } from './guard.js';
import { LegacySession } from './legacy.js';
import type { ModernHub } from './modern.js';
import { type Refusal, StreamableSession } from './session.js';

/** The sessions of every transport, counted together against maxSessions. */
export interface SessionTable {
  streamable: Map<string, StreamableSession>;
  legacy: Map<string, LegacySession>;
  /** Sessions of every kind (socket connections included) open now. */
  count(): number;
  maxSessions: number;
  /** Registers a session's end (logged once). */
  ended(kind: 'streamable' | 'legacy', id: string, label: string, why: string): void;
}

/** A refusal as sent: its headers, and the JSON-RPC error code of its body. */
type Reply = Refusal & { headers?: Record<string, string>; code?: number; id?: unknown };

class Refused extends Error {
  constructor(readonly reply: Reply) {
    super(reply.reason);
  }
}

const refuse = (status: number, reason: string, headers?: Record<string, string>): never => {
  throw new Refused({ status, reason, ...(headers === undefined ? {} : { headers }) });
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
  if (declared > limit) throw new Refused({ status: 413, reason: `the body is ${declared} bytes, over the limit of ${limit}` });
  const { body, over } = await readCapped(req, limit);
  if (over) throw new Refused({ status: 413, reason: `the body is over the limit of ${limit} bytes` });
  // Replacing bad bytes with U+FFFD would change the message (two keys could become one): refused, as the
  // decoders refuse them.
  const text = decodeUtf8(body, 0, body.length);
  if (text === undefined) throw new Refused({ status: 400, reason: 'the body is not valid UTF-8', code: -32700 });
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
  if (problem !== undefined) throw new Refused({ status: 400, reason: `the body ${problem.reason}`, code: -32700 });
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  if (messages.length === 0) refuse(400, 'the body is an empty batch');
  for (const msg of messages) {
    const shape = jsonRpcProblem(msg);
    if (shape !== undefined) refuse(400, `not a JSON-RPC message: ${shape}`);
  }
  return messages;
}

const VERSIONS = [...MODERN_PROTOCOL_VERSIONS, ...SUPPORTED_PROTOCOL_VERSIONS];

function checkProtocolVersion(req: IncomingMessage): void {
  const version = req.headers['mcp-protocol-version'];
  if (version !== undefined && !VERSIONS.includes(version as string)) {
    refuse(400, `unsupported MCP-Protocol-Version ${JSON.stringify(String(version).slice(0, 40))} (supported: ${VERSIONS.join(', ')})`);
  }
}

/** The request of a modern POST (one request whose `_meta` names a 2026-07-28-era version), or undefined. */
function modernRequest(messages: unknown[], req: IncomingMessage): JsonRpcRequest | undefined {
  const [msg] = messages;
  const version = metaVersion(msg);
  if (messages.length !== 1 || !isRequest(msg) || version === undefined || !isModernVersion(version)) return undefined;
  const mismatch = headerMismatch(msg as unknown as Record<string, unknown>, req.headers);
  if (mismatch !== undefined)
    throw new Refused({ status: 400, reason: `header mismatch: ${mismatch}`, code: MODERN_ERRORS.headerMismatch, id: msg.id });
  return msg;
}

export class HttpFront {
  readonly #ctx: ServeContext;
  readonly #guard: Guard;
  readonly #sessions: SessionTable;
  readonly #modern: ModernHub;

  constructor(ctx: ServeContext, guard: Guard, sessions: SessionTable, modern: ModernHub) {
    this.#ctx = ctx;
    this.#guard = guard;
    this.#sessions = sessions;
    this.#modern = modern;
  }

  /** The http.Server's request listener. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    // A client that resets its connection makes the response emit 'error'; that must never end the process.
    res.on('error', () => undefined);
    req.on('error', () => undefined);
    this.#route(req, res).catch((err: unknown) => {
      const reply: Reply = err instanceof Refused ? err.reply : { status: 500, reason: safeLine((err as Error).message) };
      this.#refuse(req, res, reply);
    });
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refusal = this.#guard.check(req);
    if (refusal !== undefined) throw new Refused(refusal);
    const path = new URL(req.url ?? '/', 'http://bridge').pathname;
    if (path === '/mcp') return this.#mcp(req, res);
    if (path === '/sse') return this.#legacyStream(req, res);
    if (path === '/messages') return this.#legacyPost(req, res);
    refuse(404, `no such path ${JSON.stringify(path.slice(0, 60))} (the MCP endpoint is /mcp; the legacy SSE one /sse)`);
  }

  #mcp(req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    if (req.method === 'POST') return this.#post(req, res);
    if (req.method === 'GET') return this.#get(req, res);
    if (req.method === 'DELETE') return this.#delete(req, res);
    refuse(405, `method ${safeLine(req.method ?? '')} is not allowed on /mcp`, { Allow: 'GET, POST, DELETE' });
  }

  async #post(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!accepts(req, 'application/json', 'text/event-stream')) refuse(406, 'Accept must list application/json and text/event-stream');
    requireJsonBody(req);
    checkProtocolVersion(req);
    const messages = parseMessages(await readBody(req, this.#ctx.maxMessageBytes));
    // Modern requests carry no session: they go to the shared child, whatever session header they bear.
    const modern = modernRequest(messages, req);
    if (modern !== undefined) {
      if (this.#modern.pending >= this.#ctx.maxPendingPerSession) refuse(429, `${this.#modern.pending} modern requests are in flight already`);
      return this.#modern.handle(modern, res, req.headers).catch((err: Error) => refuse(502, err.message));
    }
    const initialize = messages.find((m) => isRequest(m) && m.method === 'initialize');
    const session = initialize === undefined ? this.#session(req) : await this.#open(req, messages);
    const refusal = session.refusePost(messages);
    if (refusal !== undefined) throw new Refused(refusal);
    session.post(messages, res);
  }

  #get(req: IncomingMessage, res: ServerResponse): void {
    if (!accepts(req, 'text/event-stream')) refuse(406, 'Accept must list text/event-stream');
    checkProtocolVersion(req);
    const session = this.#session(req);
    const lastEventId = req.headers['last-event-id'];
    const refusal = session.get(res, typeof lastEventId === 'string' ? lastEventId : undefined);
    if (refusal !== undefined) throw new Refused(refusal);
  }

  async #delete(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const session = this.#session(req);
    await session.close('the client ended the session');
    res.writeHead(200).end();
  }

  /** The session a request names, or 400 (none named) or 404 (not one of ours, or ended). */
  #session(req: IncomingMessage): StreamableSession {
    const id = req.headers['mcp-session-id'];
    if (id === undefined) refuse(400, 'the Mcp-Session-Id header is required (start a session with initialize)');
    const session = this.#sessions.streamable.get(id as string);
    if (session === undefined) refuse(404, 'unknown or ended session (start a new one with initialize)');
    return session!;
  }

  /** A new session for an initialize request, its child started. */
  async #open(req: IncomingMessage, messages: unknown[]): Promise<StreamableSession> {
    if (req.headers['mcp-session-id'] !== undefined) refuse(400, 'initialize must not name a session');
    if (messages.length > 1) refuse(400, 'initialize must be sent alone');
    this.#checkRoom();
    const session = new StreamableSession(this.#ctx, (s, why) => this.#sessions.ended('streamable', s.id, s.label, why));
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
      refuse(502, (err as Error).message);
    }
    this.#ctx.log(`${session.label} started${how} (server pid ${session.channel.pid})`);
  }

  #checkRoom(): void {
    if (this.#sessions.count() >= this.#sessions.maxSessions) refuse(503, `${this.#sessions.maxSessions} sessions are open already`);
  }

  async #legacyStream(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET') refuse(405, `method ${safeLine(req.method ?? '')} is not allowed on /sse`, { Allow: 'GET' });
    if (!accepts(req, 'text/event-stream')) refuse(406, 'Accept must list text/event-stream');
    this.#checkRoom();
    const session = new LegacySession(this.#ctx, (s, why) => this.#sessions.ended('legacy', s.id, s.label, why));
    await this.#started(this.#sessions.legacy, session, ' over the legacy SSE transport');
    session.attach(res);
  }

  async #legacyPost(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') refuse(405, `method ${safeLine(req.method ?? '')} is not allowed on /messages`, { Allow: 'POST' });
    const id = new URL(req.url ?? '/', 'http://bridge').searchParams.get('sessionId');
    if (id === null) refuse(400, 'the sessionId parameter is required');
    const session = this.#sessions.legacy.get(id!);
    if (session === undefined) refuse(404, 'unknown or ended session');
    requireJsonBody(req);
    const messages = parseMessages(await readBody(req, this.#ctx.maxMessageBytes));
    const requests = messages.filter(isRequest).length;
    if (session!.pending + requests > this.#ctx.maxPendingPerSession) refuse(429, `the session has ${session!.pending} requests in flight already`);
    session!.post(messages);
    res.writeHead(202).end('Accepted');
  }

  #refuse(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
    // The path alone: a query may carry a session id (the legacy endpoint's) or a token.
    const path = new URL(req.url ?? '/', 'http://bridge').pathname;
    this.#ctx.log(`${reply.status} ${safeLine(req.method ?? '')} ${safeLine(path.slice(0, 80))}: ${safeLine(reply.reason)}`);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = JSON.stringify(rpcError(reply.id ?? null, reply.code ?? SERVER_ERROR, reply.reason));
    res.writeHead(reply.status, { 'Content-Type': 'application/json', ...reply.headers }).end(body);
    // A body left unread (413) is drained within bounds, so that the client reads the answer.
    if (reply.status === 413) drainOrClose(req);
  }
}
