/*
 * A session of the deprecated HTTP+SSE transport (2024-11-05): `GET /sse` opens it and carries everything the
 * server sends; the client POSTs to the endpoint the first event names. The stream is the session: when it
 * closes, the child is closed.
 */
import { CODES } from '../../protocol/codes.js';
import type { ServerResponse } from 'node:http';

import { idKey, isRequest, isResponse, rpcError } from '../../jsonrpc.js';
import type { ServedChild } from './children.js';
import { type ServeContext, sendAs, shortId } from './context.js';
import type { Caller } from '../../protocol/caller.js';
import type { Logger } from '../../log.js';
import { EVENT_STREAM_HEADERS, holdUntilDrained, keepAlive, writeEvent } from './event-stream.js';
import { whenGone } from '../../protocol/response.js';

export class LegacySession {
  readonly id: string;
  readonly label: string;
  readonly channel: ServedChild;
  readonly #ctx: ServeContext;
  /** Its lines, bound to it. */
  readonly log: Logger;
  #res: ServerResponse | undefined;
  #ended: string | undefined;
  /** Requests sent to the child and not answered yet, by id as sent: a child that dies owes each an error. */
  readonly #pending = new Map<string, unknown>();

  /** The subject of the caller that opened it (signed in): only that caller may post to it. */
  readonly owner: string | undefined;

  constructor(ctx: ServeContext, id: string, onEnd: (session: LegacySession, why: string) => void, caller?: Caller) {
    this.#ctx = ctx;
    this.id = id;
    this.owner = caller?.subject;
    this.label = `session ${shortId(this.id)}`;
    this.log = ctx.log.child({ session: shortId(this.id), transport: 'sse' }, this.label);
    this.channel = ctx.children.start(this.label, this.log, caller);
    this.channel.on('message', (msg: unknown) => {
      if (isResponse(msg)) this.#pending.delete(idKey(msg.id));
      this.#write(msg);
    });
    this.channel.on('close', () => {
      this.#ended ??= this.channel.endError('the server is gone').message;
      // As on /mcp: what was in flight is answered at once, not left to the client's own timeout.
      for (const id of this.#pending.values()) this.#write(rpcError(id, CODES.serverError, this.#ended));
      this.#pending.clear();
      this.#res?.end();
      onEnd(this, this.#ended);
    });
  }

  /** Requests sent to the child and not answered yet. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Makes `res` the session's stream: the endpoint event first, then every message of the server. */
  attach(res: ServerResponse): void {
    this.#res = res;
    res.writeHead(200, EVENT_STREAM_HEADERS);
    writeEvent(res, `event: endpoint\ndata: ${this.#ctx.paths.messages}?sessionId=${this.id}\n\n`);
    keepAlive(res, this.#ctx.stream.keepaliveMs);
    whenGone(res, () => void this.close('the client closed its event stream'));
  }

  post(messages: unknown[], caller?: Caller): void {
    for (const msg of messages) {
      if (isRequest(msg)) this.#pending.set(idKey(msg.id), msg.id);
      sendAs(this.#ctx, this.channel, msg, caller).catch((err: Error) => {
        if (isRequest(msg) && this.#pending.delete(idKey(msg.id))) this.#write(rpcError(msg.id, CODES.serverError, err.message));
      });
    }
  }

  /** An answer of serve's own to the client, on the stream (a request it refused before the server saw it). */
  answer(msg: unknown): void {
    this.#write(msg);
  }

  async close(why: string): Promise<void> {
    this.#ended ??= why;
    this.#res?.end();
    await this.channel.close();
  }

  #write(msg: unknown): void {
    const res = this.#res;
    if (res === undefined) return;
    writeEvent(res, `event: message\ndata: ${JSON.stringify(msg)}\n\n`);
    // A client that does not read its stream stops its server being read, instead of filling our memory.
    holdUntilDrained(res, () => this.channel.holdInput());
  }
}
