/*
 * What replicas of one `serve` share through a store (see redis-store.ts): which replica owns each session,
 * how many sessions are open across them, and a tunnel that carries a request for a session owned elsewhere
 * to its owner and the owner's response (JSON, or an event stream as it is written) back.
 *
 * The request and response types are the parts of node:http's that the tunnel carries; nothing here imports
 * a store's client, so a plain `serve` never loads one.
 */
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Caller } from '../../protocol/caller.js';
import { isObject } from '../../jsonrpc.js';

/** A request carried to the replica that owns its session. The body is read already (a POST's). */
export interface TunnelRequest {
  method: string;
  /** Path and query. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * The headers a tunnel carries: those the session handling reads (and the modern revision's, checked against
 * the body). The bearer token and cookies stay behind.
 */
const CARRIED = new Set(['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'mcp-method', 'mcp-name']);
const carried = (name: string): boolean => CARRIED.has(name) || name.startsWith('mcp-param-');

/**
 * The header that carries a signed-in caller to the replica that owns the session: the identity this replica
 * found in the token (never the token itself). Only a carried request's is read; a client's own is never carried.
 */
const CALLER_HEADER = 'mcp-frame-caller';

/** A request as the tunnel carries it (with the caller this replica found in its token, when signed in). */
export function tunnelRequest(req: IncomingMessage, body = '', caller?: Caller): TunnelRequest {
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (carried(name)) headers[name] = value;
  if (caller !== undefined) headers[CALLER_HEADER] = JSON.stringify(caller);
  return { method: req.method ?? 'GET', url: req.url ?? '/', headers, body };
}

/** The caller a carried request names (see tunnelRequest), or undefined. */
export function carriedCaller(headers: IncomingHttpHeaders): Caller | undefined {
  const text = headers[CALLER_HEADER];
  if (typeof text !== 'string') return undefined;
  const caller: unknown = JSON.parse(text);
  if (!isObject(caller) || typeof caller.subject !== 'string' || !Array.isArray(caller.scopes) || !isObject(caller.claims)) return undefined;
  return caller as unknown as Caller;
}

/** A carried request as the HTTP handling reads one: a readable body with the request line and headers. */
export function incomingOf(request: TunnelRequest): IncomingMessage {
  return Object.assign(Readable.from([Buffer.from(request.body)]), {
    method: request.method,
    url: request.url,
    headers: request.headers,
  }) as unknown as IncomingMessage;
}

/** One part of a response on its way back through a tunnel. */
export type TunnelFrame =
  | { k: 'head'; status: number; headers: OutgoingHttpHeaders }
  | { k: 'data'; text: string }
  | { k: 'end' }
  /**
   * The owner cut the response (as a refusal after the headers went out does), or could not send all of it (the
   * store was out of reach): the request may have run.
   */
  | { k: 'cut' };

/**
 * Bytes of a carried response that may be on their way (written by the owner, not yet drained to the client by
 * the replica that holds its connection) before the owner's writes report backpressure. It is over the session's
 * hold mark (a MiB), so a client that stops reading stops its server through a tunnel as it does directly.
 */
export const TUNNEL_WINDOW_BYTES = 2 * 1024 * 1024;

/**
 * The response an owner writes for a carried request: the parts of ServerResponse the session handling uses.
 * Each write becomes a frame sent back to the replica that holds the client's connection; `gone()` is the
 * client leaving, which ends the owner's side as a closed connection does.
 *
 * Flow control: the holding replica acknowledges the bytes its client has drained (acknowledge()); past
 * TUNNEL_WINDOW_BYTES unacknowledged, write() returns false and `writableNeedDrain` is true until an
 * acknowledgement brings it under half the window, when 'drain' is emitted, as a socket's response does.
 */
export class TunnelResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  destroyed = false;
  readonly req = undefined;
  readonly #headers: OutgoingHttpHeaders = {};
  readonly #send: (frame: TunnelFrame) => void;
  #sent = 0;
  #acked = 0;
  #needDrain = false;

  constructor(send: (frame: TunnelFrame) => void) {
    super();
    this.#send = send;
  }

  /** Bytes written and not yet acknowledged as drained by the client's side. */
  get writableLength(): number {
    return this.#sent - this.#acked;
  }

  get writableNeedDrain(): boolean {
    return this.#needDrain;
  }

  /** The holding replica's client has drained `bytes` of the body in all. */
  acknowledge(bytes: number): void {
    if (!(bytes > this.#acked) || bytes > this.#sent) return;
    this.#acked = bytes;
    if (this.#needDrain && this.writableLength <= TUNNEL_WINDOW_BYTES / 2) {
      this.#needDrain = false;
      this.emit('drain');
    }
  }

  setHeader(name: string, value: number | string | string[]): this {
    this.#headers[name.toLowerCase()] = value;
    return this;
  }

  writeHead(status: number, headers: OutgoingHttpHeaders = {}): this {
    if (this.headersSent) return this;
    this.headersSent = true;
    this.statusCode = status;
    this.#send({ k: 'head', status, headers: { ...this.#headers, ...headers } });
    return this;
  }

  flushHeaders(): void {
    this.writeHead(this.statusCode);
  }

  write(text: string): boolean {
    if (this.writableEnded || this.destroyed) return true;
    this.flushHeaders();
    this.#sent += Buffer.byteLength(text);
    this.#send({ k: 'data', text });
    if (this.writableLength >= TUNNEL_WINDOW_BYTES) this.#needDrain = true;
    return !this.#needDrain;
  }

  end(text?: string): this {
    if (this.writableEnded || this.destroyed) return this;
    if (text !== undefined) this.write(text);
    this.flushHeaders();
    this.writableEnded = true;
    this.#send({ k: 'end' });
    this.emit('finish');
    this.emit('close');
    return this;
  }

  destroy(): this {
    if (this.writableEnded || this.destroyed) return this;
    this.#send({ k: 'cut' });
    this.gone();
    return this;
  }

  /** The client's side went away (or the tunnel did): the response closes without being written further. */
  gone(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }

  /** As the session handling takes it. */
  get asResponse(): ServerResponse {
    return this as unknown as ServerResponse;
  }
}

/**
 * The store cannot be reached (or answered with an error): a request that needs it gets 503, which says the
 * request was never passed to a server.
 */
export class StoreUnavailable extends Error {
  override name = 'StoreUnavailable';
}

/**
 * A carried request that the store may have passed on before it failed (it took the request and went silent):
 * its owner may be running it, so its client gets 502 with an error that says so, never a 503 that invites a
 * retry which would run it twice.
 */
export class MayHaveRun extends Error {
  override name = 'MayHaveRun';
}

/** What the replicas of one service share. One per serve(); see redis-store.ts. */
export interface ReplicaStore {
  /** The store's address for messages, without credentials. */
  readonly name: string;
  /** This replica's id in the store (random; never sent to clients). */
  readonly replica: string;
  /** Why the store cannot be used now, or undefined while it answers. */
  problem(): string | undefined;
  /**
   * Registers session `id` as this replica's when fewer than `max` sessions are open across the replicas.
   * Resolves undefined when admitted, or with the number open. StoreUnavailable when the store cannot answer.
   */
  admit(id: string, max: number): Promise<number | undefined>;
  /**
   * The session ended: it is no longer this replica's, and no longer counts. Resolves once the store has it so
   * (at once for a session not this replica's); never rejects: a store that does not answer is told later.
   */
  release(id: string): Promise<void>;
  /**
   * Claims `id` of `kind` for `ttlMs` across the replicas (a DPoP proof's jti): true when none had it. Rejects
   * when the store does not answer.
   */
  claimOnce(kind: string, id: string, ttlMs: number): Promise<boolean>;
  /**
   * Takes one call of `key` under a limit of `count` in `periodMs`, across the replicas (see gateway/rate.ts): 0
   * when taken, else the milliseconds until one would be. Rejects when the store does not answer.
   */
  rate(key: string, count: number, periodMs: number): Promise<number>;
  /** The live replica that owns session `id`, or undefined (unknown, ended, or its owner is gone). */
  ownerOf(id: string): Promise<string | undefined>;
  /**
   * Carries `request` to `owner` and writes its answer to `res` as it comes. False when the owner is not there
   * to take it. A response whose owner disappears is ended within a few seconds, never left hanging.
   * StoreUnavailable when the request surely did not reach the owner; MayHaveRun when it may have.
   */
  forward(owner: string, request: TunnelRequest, res: ServerResponse): Promise<boolean>;
  /** The key replicas prove themselves with when they forward a request over HTTP (undefined until the store gave it). */
  readonly peerKey: string | undefined;
  /** Handles requests other replicas carry here. */
  onForwarded(handler: (request: TunnelRequest, res: TunnelResponse) => void): void;
  /** Stops heartbeats, says in the store at once that this replica and its sessions are gone, disconnects. */
  close(): Promise<void>;
}
