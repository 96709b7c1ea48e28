/*
 * A Streamable HTTP session: one child process, the requests in flight and the event stream each answer goes
 * out on. Requests keep their ids on the way to the child (a second request with an id still in flight is
 * refused), so answers are routed by id; a progress notification goes out on the stream of the request that
 * asked for it.
 */
import { CODES } from '../../protocol/codes.js';
import type { ServerResponse } from 'node:http';

import { startLegacyHostSession } from '../../client/translate.js';
import { type LegacyHostSession, modernOnlyRefusal } from '../../protocol/translate.js';
import { idKey, isObject, isRequest, isResponse, type JsonRpcId, rpcError } from '../../jsonrpc.js';
import type { ServedChild } from './children.js';
import { type ServeContext, sendAs, shortId } from './context.js';
import type { Caller } from '../../protocol/caller.js';
import { Refusal } from '../../protocol/refusal.js';
import type { Logger } from '../../log.js';
import { EVENT_STREAM_HEADERS, EventStream, parseEventId } from './event-stream.js';
import { whenGone } from '../../protocol/response.js';

/** How many answered streams a session keeps for clients that resume late. */
const RETAINED_STREAMS = 16;

interface Pending {
  id: JsonRpcId;
  stream: EventStream;
  progressToken: string | undefined;
}

function progressTokenOf(msg: { params?: unknown }): string | undefined {
  const meta = isObject(msg.params) ? msg.params._meta : undefined;
  const token = isObject(meta) ? meta.progressToken : undefined;
  return typeof token === 'string' || typeof token === 'number' ? idKey(token) : undefined;
}

/** The first revision whose clients take the priming event (SEP-1699); revisions compare as their dates do. */
const PRIMING_SINCE = '2025-11-25';

export class StreamableSession {
  readonly id: string;
  readonly label: string;
  readonly channel: ServedChild;
  /** Date.now() of the last request, or of the last response stream that closed. */
  lastActive = Date.now();
  /** POSTs taken (the first is the initialize that opened the session), and whether a GET stream was opened. */
  #posts = 0;
  #listened = false;
  readonly #ctx: ServeContext;
  /** Its lines, bound to it. */
  readonly log: Logger;
  readonly #get: EventStream;
  readonly #streams = new Map<number, EventStream>();
  readonly #answered: EventStream[] = [];
  readonly #open = new Map<EventStream, number>();
  readonly #pending = new Map<string, Pending>();
  readonly #progress = new Map<string, EventStream>();
  #nextStream = 1;
  #ended: string | undefined;
  #endedDone = false;
  /** The client's initialize, until the child answers it. */
  #init: { id: JsonRpcId; params: Record<string, unknown> } | undefined;
  /** A modern-only child: the client's legacy session is answered here, over a Connection (see LegacyHostSession). */
  #translating: Promise<LegacyHostSession | undefined> | undefined;
  #translation: LegacyHostSession | undefined;
  /**
   * The revision the client asked for in its initialize: what it can parse. (A client that asked for 2025-11-25
   * takes the priming event even where its server agreed to an earlier revision.)
   */
  #version: string | undefined;

  /** The subject of the caller that opened it (signed in): only that caller may use it. */
  readonly owner: string | undefined;

  constructor(ctx: ServeContext, id: string, onEnd: (session: StreamableSession, why: string) => void, caller?: Caller) {
    this.#ctx = ctx;
    this.id = id;
    this.owner = caller?.subject;
    this.label = `session ${shortId(this.id)}`;
    this.log = ctx.log.child({ session: shortId(this.id) }, this.label);
    this.channel = ctx.children.start(this.label, this.log, caller);
    this.#get = this.#newStream(0);
    this.#streams.set(0, this.#get);
    this.channel.on('message', (msg: unknown) => this.#fromServer(msg));
    this.channel.on('close', () => {
      this.#end(this.channel.endError('the server is gone').message);
      onEnd(this, this.#ended!);
    });
  }

  /** Streams a client is reading now. */
  get attachedStreams(): number {
    let n = 0;
    for (const stream of this.#streams.values()) if (stream.attached) n++;
    return n;
  }

  /** Why these messages cannot be taken now, or undefined. */
  refusePost(messages: unknown[]): Refusal | undefined {
    if (this.#ended !== undefined) return new Refusal(404, 'the session has ended');
    const requests = messages.filter(isRequest);
    if (requests.length === 0) return undefined;
    if (this.attachedStreams >= this.#ctx.maxStreamsPerSession) {
      return new Refusal(429, `the session has ${this.#ctx.maxStreamsPerSession} streams open already`);
    }
    if (this.#pending.size + requests.length > this.#ctx.maxPendingPerSession) {
      return new Refusal(429, `the session has ${this.#pending.size} requests in flight already`);
    }
    const ids = new Set<string>();
    for (const { id } of requests) {
      const key = idKey(id);
      if (this.#pending.has(key) || ids.has(key)) return new Refusal(400, `request id ${JSON.stringify(id)} is already in flight`);
      ids.add(key);
    }
    return undefined;
  }

  /** The client sent its initialize and nothing after it (not even notifications/initialized, nor a GET). */
  get abandoned(): boolean {
    return this.#posts <= 1 && !this.#listened;
  }

  /**
   * Takes a POST's messages (checked by refusePost): without requests, 202; with requests, a new event stream
   * on `res` that ends once each is answered.
   */
  post(messages: unknown[], res: ServerResponse, caller?: Caller): void {
    this.lastActive = Date.now();
    this.#posts++;
    const requests = messages.filter(isRequest);
    if (requests.length > 0) {
      const stream = this.#newStream(this.#nextStream++);
      this.#streams.set(stream.number, stream);
      this.#open.set(stream, requests.length);
      for (const request of requests) {
        const progressToken = progressTokenOf(request);
        this.#pending.set(idKey(request.id), { id: request.id, stream, progressToken });
        if (progressToken !== undefined) this.#progress.set(progressToken, stream);
      }
      stream.attachWhenFirstEvent(res, { ...EVENT_STREAM_HEADERS, 'Mcp-Session-Id': this.id });
      whenGone(res, () => (this.lastActive = Date.now()));
    } else {
      res.writeHead(202, { 'Mcp-Session-Id': this.id }).end();
    }
    for (const msg of messages) this.#toServer(msg, caller);
  }

  /** A GET: the session's own stream, or (with Last-Event-ID) the rest of the stream that event was on. */
  get(res: ServerResponse, lastEventId: string | undefined): Refusal | undefined {
    if (this.#ended !== undefined) return new Refusal(404, 'the session has ended');
    let stream = this.#get;
    let after: number | undefined;
    if (lastEventId !== undefined) {
      const event = parseEventId(lastEventId);
      const found = event === undefined ? undefined : this.#streams.get(event.stream);
      if (event === undefined || found === undefined) return new Refusal(400, `unknown Last-Event-ID ${JSON.stringify(lastEventId.slice(0, 40))}`);
      const problem = found.resumeProblem(event.seq);
      if (problem !== undefined) return new Refusal(410, problem);
      stream = found;
      after = event.seq;
    }
    // A resume (Last-Event-ID) takes the stream over: its client lost it, though the end of the old response may
    // not have come yet (cut at another replica, carried here later). A second GET without one is refused.
    if (stream.attached && (after === undefined || !stream.release()))
      return new Refusal(409, `stream ${stream.number} of the session is open already`);
    if (this.attachedStreams >= this.#ctx.maxStreamsPerSession) {
      return new Refusal(429, `the session has ${this.#ctx.maxStreamsPerSession} streams open already`);
    }
    this.lastActive = Date.now();
    this.#listened = true;
    res.writeHead(200, { ...EVENT_STREAM_HEADERS, 'Mcp-Session-Id': this.id });
    stream.attach(res, after);
    whenGone(res, () => (this.lastActive = Date.now()));
    return undefined;
  }

  /** Ends the session: its child is closed, each request in flight answered with an error saying why. */
  async close(why: string): Promise<void> {
    this.#end(why);
    await this.channel.close();
  }

  /** A stream whose slow reader stops the child being read until it catches up (the child then waits). */
  #newStream(number: number): EventStream {
    return new EventStream(number, this.#ctx.stream, {
      hold: () => this.channel.holdInput(),
      // The priming event is 2025-11-25's: a client of an earlier revision may fail on its empty data.
      primes: () => this.#version === undefined || this.#version >= PRIMING_SINCE,
    });
  }

  /** `caller`: who sent it now (its scopes may have grown since the session opened). */
  #toServer(msg: unknown, caller: Caller | undefined): void {
    // A cancelled request may never be answered (a translation drops it too): its stream must not wait for it.
    if (isObject(msg) && msg.method === 'notifications/cancelled' && isObject(msg.params)) {
      const pending = this.#pending.get(idKey(msg.params.requestId));
      if (pending !== undefined) this.#settle(pending);
    }
    if (this.#translating !== undefined) {
      // In order: each waits for the translation, and for the one before it to be handed on.
      this.#translating = this.#translating.then((session) => {
        session?.fromHost(msg);
        return session;
      });
      return;
    }
    if (isRequest(msg) && msg.method === 'initialize') {
      this.#init = { id: msg.id, params: isObject(msg.params) ? msg.params : {} };
      if (typeof this.#init.params.protocolVersion === 'string') this.#version = this.#init.params.protocolVersion;
    }
    sendAs(this.#ctx, this.channel, msg, caller).catch((err: Error) => {
      if (isRequest(msg)) this.#answer(rpcError(msg.id, CODES.serverError, err.message));
    });
  }

  #fromServer(msg: unknown): void {
    // Translating: the Connection reads the child.
    if (this.#translating !== undefined) return;
    if (isResponse(msg) && this.#init !== undefined && idKey(msg.id) === idKey(this.#init.id)) {
      if (modernOnlyRefusal(msg)) return this.#translate(msg as unknown as Record<string, unknown>);
      this.#init = undefined;
    }
    this.#toClient(msg);
  }

  /** A message for the client: an answer goes to its request's stream, anything else where #routeOf says. */
  #toClient(msg: unknown): void {
    if (isResponse(msg)) {
      this.#answer(msg);
      return;
    }
    this.#routeOf(msg).push(JSON.stringify(msg));
  }

  /**
   * The child refused the client's initialize naming only modern revisions: the session goes on over a
   * Connection that speaks modern to it, and the client gets a legacy session from here.
   */
  #translate(refusal: Record<string, unknown>): void {
    const init = this.#init!;
    this.#init = undefined;
    this.#translating = (async () => {
      try {
        const { session, version } = await startLegacyHostSession(this.channel, init, refusal, (msg) => this.#toClient(msg));
        this.#translation = session;
        this.log.info('session.translating', `the server speaks only ${version}: translating`, { version });
        return session;
      } catch (err) {
        this.#answer(rpcError(init.id, CODES.serverError, (err as Error).message));
        return undefined;
      }
    })();
  }

  /** Where a message from the server that is not an answer goes. */
  #routeOf(msg: unknown): EventStream {
    if (isObject(msg) && msg.method === 'notifications/progress' && isObject(msg.params)) {
      const stream = this.#progress.get(idKey(msg.params.progressToken));
      if (stream !== undefined) return stream;
    }
    if (!this.#get.attached && this.#pending.size === 1) {
      const [only] = this.#pending.values();
      if (only!.stream.attached) return only!.stream;
    }
    return this.#get;
  }

  #answer(msg: { id: unknown }): void {
    const pending = this.#pending.get(idKey(msg.id));
    if (pending === undefined) {
      if (this.#ctx.trace) this.log.info('session.dropped', `dropped an answer to ${JSON.stringify(msg.id)}: no request of that id is in flight`);
      return;
    }
    pending.stream.push(JSON.stringify(msg));
    this.#settle(pending);
  }

  /** A request is done with: its stream finishes once it has no other request open. */
  #settle(pending: Pending): void {
    this.#pending.delete(idKey(pending.id));
    if (pending.progressToken !== undefined) this.#progress.delete(pending.progressToken);
    const left = (this.#open.get(pending.stream) ?? 1) - 1;
    if (left > 0) {
      this.#open.set(pending.stream, left);
      return;
    }
    this.#open.delete(pending.stream);
    pending.stream.finish();
    this.#answered.push(pending.stream);
    if (this.#answered.length > RETAINED_STREAMS) this.#streams.delete(this.#answered.shift()!.number);
  }

  #end(why: string): void {
    if (this.#endedDone) return;
    this.#endedDone = true;
    this.#translation?.close();
    this.#ended = why;
    for (const pending of [...this.#pending.values()]) this.#answer(rpcError(pending.id, CODES.serverError, why));
    this.#get.finish();
  }
}
