/*
 * Modern (2026-07-28) requests through `serve`: they carry no session, so they all go to one shared child
 * process. Each gets a bridge-wide id (and progress token) on the way in, so that clients' ids cannot collide,
 * and its own response: JSON when the answer comes first (with the status the spec gives a modern error), an
 * event stream when a notification comes before it. A client that closes its response cancels the request.
 */
import type { ServerResponse } from 'node:http';
import { isModernError } from '../client/modern.js';
import type { StdioChannel } from '../client/stdio.js';
import { isObject, isRequest, isResponse, type JsonRpcRequest } from '../jsonrpc.js';
import { rpcError, SERVER_ERROR, type ServeContext, startChild } from './context.js';
import { EVENT_STREAM_HEADERS, keepAlive, whenGone, writeEvent } from './event-stream.js';

/**
 * Bytes a modern request's response may hold unread before the request is cancelled. The child is shared by
 * every client, so one that stops reading cannot be allowed to stop it (as a session's own child is stopped):
 * its request goes instead.
 */
const UNREAD_BYTES = 8 * 1024 * 1024;

/** How long a `server/discover` may go unanswered before the bridge says the server does not speak it. */
const DISCOVER_TIMEOUT_MS = 2000;

interface Exchange {
  id: unknown;
  res: ServerResponse;
  token: unknown;
  streaming: boolean;
  timer: NodeJS.Timeout | undefined;
}

/** The HTTP status a modern error answer goes out with (the spec's: 400 for version and header errors, 404 for an unknown method). */
function statusOf(msg: Record<string, unknown>): number {
  const code = isObject(msg.error) ? msg.error.code : undefined;
  if (code === -32601) return 404;
  if (isModernError(code)) return 400;
  return 200;
}

export class ModernHub {
  readonly #ctx: ServeContext;
  #child: StdioChannel | undefined;
  readonly #exchanges = new Map<number, Exchange>();
  readonly #tokens = new Map<string, number>();
  #next = 1;
  #droppedCount = 0;

  constructor(ctx: ServeContext) {
    this.#ctx = ctx;
  }

  /** Requests in flight. */
  get pending(): number {
    return this.#exchanges.size;
  }

  /** Messages of the shared child that could not be attributed to a request in flight, and were dropped. */
  get dropped(): number {
    return this.#droppedCount;
  }

  /** Forwards one modern request; its answer (and notifications) go out on `res`. */
  async handle(msg: JsonRpcRequest, res: ServerResponse): Promise<void> {
    const child = await this.#started();
    const n = this.#next++;
    const params = isObject(msg.params) ? { ...msg.params } : undefined;
    const meta = params !== undefined && isObject(params._meta) ? { ...params._meta } : undefined;
    const exchange: Exchange = { id: msg.id, res, token: meta?.progressToken, streaming: false, timer: undefined };
    if (meta !== undefined && meta.progressToken !== undefined) {
      meta.progressToken = `mcp-frame-${n}`;
      params!._meta = meta;
      this.#tokens.set(`mcp-frame-${n}`, n);
    }
    this.#exchanges.set(n, exchange);
    if (msg.method === 'server/discover') {
      exchange.timer = setTimeout(
        () => this.#answer(n, rpcError(n, -32601, 'the server behind this bridge does not answer server/discover')),
        DISCOVER_TIMEOUT_MS,
      );
    }
    // Closing the response is the cancellation of a modern request; the child hears it the stdio way.
    whenGone(res, () => {
      if (!this.#forget(n)) return;
      child
        .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: n, reason: 'the client closed its response' } })
        .catch(() => undefined);
    });
    const forwarded = { ...msg, id: n, ...(params === undefined ? {} : { params }) };
    await child.send(forwarded).catch((err: Error) => this.#answer(n, rpcError(n, SERVER_ERROR, err.message)));
  }

  async close(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    await child?.close();
  }

  async #started(): Promise<StdioChannel> {
    if (this.#child !== undefined) return this.#child;
    const child = startChild(this.#ctx, 'modern requests');
    this.#child = child;
    child.on('message', (msg: unknown) => this.#fromServer(msg));
    child.on('close', () => {
      if (this.#child === child) this.#child = undefined;
      const why = child.endError('the server is gone').message;
      for (const n of [...this.#exchanges.keys()]) this.#answer(n, rpcError(n, SERVER_ERROR, why));
      if (this.#ctx.shuttingDown !== true) this.#ctx.log(`the server for modern requests ended: ${why}`);
    });
    try {
      await child.started;
    } catch (err) {
      this.#child = undefined;
      throw err;
    }
    this.#ctx.log(`the server for modern requests started (server pid ${child.pid})`);
    return child;
  }

  #fromServer(msg: unknown): void {
    if (isResponse(msg)) return this.#answer(msg.id as number, msg as unknown as Record<string, unknown>);
    if (!isObject(msg) || isRequest(msg)) return this.#dropped(msg, 'the modern era has no requests from the server');
    const params = isObject(msg.params) ? msg.params : {};
    // Only a progress token says which request (and so which client) a notification belongs to: the child is
    // shared, so anything else (a log message, a list change) could be another client's and is not passed on.
    const n = params.progressToken === undefined ? undefined : this.#tokens.get(String(params.progressToken));
    const exchange = n === undefined ? undefined : this.#exchanges.get(n);
    if (exchange === undefined) return this.#dropped(msg, 'it names no request in flight');
    const out = params.progressToken === undefined ? msg : { ...msg, params: { ...params, progressToken: exchange.token } };
    const res = this.#stream(exchange);
    writeEvent(res, `event: message\ndata: ${JSON.stringify(out)}\n\n`);
    if (res.writableLength > Math.max(UNREAD_BYTES, this.#ctx.maxMessageBytes)) {
      this.#ctx.log(`cancelled a modern request: its client left ${res.writableLength} bytes of its response unread`);
      res.destroy();
    }
  }

  /** The request's answer, with its own id back: as JSON, or as the last event of its stream. */
  #answer(n: number, msg: Record<string, unknown>): void {
    const exchange = this.#exchanges.get(n);
    if (exchange === undefined || !this.#forget(n)) return;
    const out = { ...msg, id: exchange.id };
    if (exchange.res.destroyed) return;
    if (exchange.streaming) {
      exchange.res.end(`event: message\ndata: ${JSON.stringify(out)}\n\n`);
      return;
    }
    exchange.res.writeHead(statusOf(msg), { 'Content-Type': 'application/json' }).end(JSON.stringify(out));
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

  /** Drops a request's bookkeeping; false when it was gone already. */
  #forget(n: number): boolean {
    const exchange = this.#exchanges.get(n);
    if (exchange === undefined) return false;
    clearTimeout(exchange.timer);
    this.#exchanges.delete(n);
    this.#tokens.delete(`mcp-frame-${n}`);
    return true;
  }

  #dropped(msg: unknown, why: string): void {
    this.#droppedCount++;
    if (this.#ctx.trace) this.#ctx.log(`dropped a message of the server for modern requests (${why}): ${JSON.stringify(msg).slice(0, 80)}`);
  }
}
