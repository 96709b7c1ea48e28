/*
 * A session of the deprecated HTTP+SSE transport (2024-11-05): `GET /sse` opens it and carries everything the
 * server sends; the client POSTs to the endpoint the first event names. The stream is the session: when it
 * closes, the child is closed.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { StdioChannel } from '../client/stdio.js';
import { isRequest } from '../jsonrpc.js';
import { rpcError, SERVER_ERROR, type ServeContext, shortId, startChild } from './context.js';
import { EVENT_STREAM_HEADERS, keepAlive } from './event-stream.js';

export class LegacySession {
  readonly id = randomUUID();
  readonly label: string;
  readonly channel: StdioChannel;
  readonly #ctx: ServeContext;
  #res: ServerResponse | undefined;
  #ended: string | undefined;

  constructor(ctx: ServeContext, onEnd: (session: LegacySession, why: string) => void) {
    this.#ctx = ctx;
    this.label = `session ${shortId(this.id)}`;
    this.channel = startChild(ctx, this.label);
    this.channel.on('message', (msg: unknown) => this.#write(msg));
    this.channel.on('close', () => {
      this.#ended ??= this.channel.endError('the server is gone').message;
      this.#res?.end();
      onEnd(this, this.#ended);
    });
  }

  /** Makes `res` the session's stream: the endpoint event first, then every message of the server. */
  attach(res: ServerResponse): void {
    this.#res = res;
    res.writeHead(200, EVENT_STREAM_HEADERS);
    res.write(`event: endpoint\ndata: /messages?sessionId=${this.id}\n\n`);
    keepAlive(res, this.#ctx.stream.keepaliveMs);
    res.once('close', () => void this.close('the client closed its event stream'));
  }

  post(messages: unknown[]): void {
    for (const msg of messages) {
      this.channel.send(msg).catch((err: Error) => {
        if (isRequest(msg)) this.#write(rpcError(msg.id, SERVER_ERROR, err.message));
      });
    }
  }

  async close(why: string): Promise<void> {
    this.#ended ??= why;
    this.#res?.end();
    await this.channel.close();
  }

  #write(msg: unknown): void {
    this.#res?.write(`event: message\ndata: ${JSON.stringify(msg)}\n\n`);
  }
}
