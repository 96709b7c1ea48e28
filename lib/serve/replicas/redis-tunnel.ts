/*
 * The tunnel through Redis pub/sub between replicas (see store.ts for its frames and window): the messages on a
 * replica's channel, and the end of it that serves requests other replicas carried here, as if they had come in
 * directly, sending each answer back frame by frame (a body in pieces, acknowledged by the holding replica).
 */
import type { ServerResponse } from 'node:http';
import { rpcError } from '../../jsonrpc.js';
import { CODES } from '../../protocol/codes.js';
import { TUNNEL_WINDOW_BYTES, type TunnelFrame, type TunnelRequest, TunnelResponse } from './store.js';

/**
 * Characters of a body one message through Redis carries at most; a longer body goes in pieces. Redis drops a
 * subscriber whose output buffer passes `client-output-buffer-limit pubsub` (32 MiB, or 8 MiB for a minute, by
 * default), and with it every other tunnel's frames in flight: no one message may come near that, and with the
 * tunnel's window no one response keeps more than a few MiB on its way.
 */
export const PIECE_CHARS = 256 * 1024;
/** The holding replica acknowledges what its client drained in steps of this many bytes. */
const ACK_BYTES = TUNNEL_WINDOW_BYTES / 4;
/** How long the pieces of a request body wait for the rest before they are dropped (the sender died). */
const PARTS_MS = 30_000;

/** A message on a replica's channel: a carried request, the client leaving, a part of an answer, flow control. */
export type Envelope =
  | ({ k: 'request'; t: string; from: string } & TunnelRequest)
  /** A piece of a carried request's body, ahead of its 'request' (which carries the last piece). */
  | { k: 'part'; t: string; from: string; text: string }
  | { k: 'gone'; t: string; from: string }
  /** Parts of an answer, those written in one turn of the event loop together (at most PIECE_CHARS of body). */
  | { k: 'answer'; t: string; from: string; frames: TunnelFrame[] }
  /** The holding replica's client has drained `bytes` of the answer's body. */
  | { k: 'ack'; t: string; from: string; bytes: number };

/** `text` in pieces of at most `max` characters, never between the two halves of a surrogate pair. */
export function pieces(text: string, max: number): string[] {
  if (text.length <= max) return [text];
  const out: string[] = [];
  for (let at = 0; at < text.length; ) {
    let end = Math.min(at + max, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    out.push(text.slice(at, end));
    at = end;
  }
  return out;
}

/** Requests other replicas carried to this one, by `<replica>/<tunnel id>`. */
export class CarriedHere {
  readonly #replica: string;
  readonly #publish: (replica: string, envelope: Envelope) => Promise<number>;
  #handler: ((request: TunnelRequest, res: TunnelResponse) => void) | undefined;
  /** Requests carried here, by `<replica>/<tunnel id>`. */
  readonly #served = new Map<string, TunnelResponse>();
  /** Bodies of requests carried here still arriving in pieces, by `<replica>/<tunnel id>`. */
  readonly #parts = new Map<string, { pieces: string[]; timer: NodeJS.Timeout }>();
  /**
   * Answers of requests carried here that could not all be sent (the store did not take a part): the replica
   * holding the client is told so (a cut) once the store answers again, so its request does not wait forever.
   */
  readonly #lost = new Map<string, { from: string; t: string }>();

  /** `replica`: this one's id; `publish`: a message to another replica's channel (how many received it). */
  constructor(replica: string, publish: (replica: string, envelope: Envelope) => Promise<number>) {
    this.#replica = replica;
    this.#publish = publish;
  }

  /** Who handles a carried request, as serve's front does one that came in directly. */
  onRequest(handler: (request: TunnelRequest, res: TunnelResponse) => void): void {
    this.#handler = handler;
  }

  /** A message on this replica's channel, but an answer (which is for the requests it carried out). */
  received(envelope: Exclude<Envelope, { k: 'answer' }>): void {
    const key = `${envelope.from}/${envelope.t}`;
    switch (envelope.k) {
      case 'part':
        return this.#part(key, envelope.text);
      case 'request':
        return this.#serve(key, envelope);
      case 'gone':
        this.#served.get(key)?.gone();
        this.#served.delete(key);
        return;
      case 'ack':
        return this.#served.get(key)?.acknowledge(envelope.bytes);
    }
  }

  /** Tells the replicas whose answers were cut so (the store takes messages again); throws when it still does not. */
  async resendCuts(): Promise<void> {
    for (const [key, { from, t }] of this.#lost) {
      await this.#publish(from, { k: 'answer', t, from: this.#replica, frames: [{ k: 'cut' }] });
      this.#lost.delete(key);
    }
  }

  /** Every request carried here ends (its client is told it is gone); pieces waiting are dropped. */
  close(): void {
    for (const res of this.#served.values()) res.gone();
    for (const { timer } of this.#parts.values()) clearTimeout(timer);
    this.#parts.clear();
  }

  /** A piece of a carried request's body, kept until its request comes (or PARTS_MS passes). */
  #part(key: string, text: string): void {
    let parts = this.#parts.get(key);
    if (parts === undefined) {
      const timer = setTimeout(() => this.#parts.delete(key), PARTS_MS);
      timer.unref();
      parts = { pieces: [], timer };
      this.#parts.set(key, parts);
    }
    parts.pieces.push(text);
  }

  /** A request carried here: handled as if it had come in directly, its answer sent back frame by frame. */
  #serve(key: string, envelope: Extract<Envelope, { k: 'request' }>): void {
    const { from, t, method, url, headers } = envelope;
    const parts = this.#parts.get(key);
    this.#parts.delete(key);
    clearTimeout(parts?.timer);
    const body = parts === undefined ? envelope.body : parts.pieces.join('') + envelope.body;
    // What is written in one turn of the event loop goes out as one message (an answer's head, body and end), up
    // to PIECE_CHARS of body a message.
    let frames: TunnelFrame[] = [];
    let chars = 0;
    let scheduled = false;
    const flush = (): void => {
      scheduled = false;
      if (frames.length === 0) return;
      const batch = frames;
      frames = [];
      chars = 0;
      this.#publish(from, { k: 'answer', t, from: this.#replica, frames: batch })
        .then((receivers) => {
          // The replica holding the client is gone: so is the client's connection.
          if (receivers === 0) res.gone();
        })
        .catch(() => {
          // Part of the answer did not go: the holding replica is told once the store answers again.
          this.#lost.set(key, { from, t });
          res.gone();
        });
    };
    const push = (frame: TunnelFrame): void => {
      frames.push(frame);
      if (frame.k === 'data') chars += frame.text.length;
      if (chars >= PIECE_CHARS) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    };
    const res = new TunnelResponse((frame) => {
      if (frame.k === 'end' || frame.k === 'cut') this.#served.delete(key);
      if (frame.k !== 'data') return push(frame);
      for (const text of pieces(frame.text, PIECE_CHARS)) push({ k: 'data', text });
    });
    res.once('close', () => this.#served.delete(key));
    this.#served.set(key, res);
    this.#handler?.({ method, url, headers, body }, res);
  }
}

/** A request this replica carried out to its session's owner, and how much of its answer the client drained. */
export interface Carried {
  owner: string;
  res: ServerResponse;
  /** The carried request's HTTP method: a POST's messages may have run at an owner that died. */
  method: string;
  /** Bytes of the body written to the client, and the most acknowledged to the owner. */
  received: number;
  acked: number;
  /** An acknowledgement waits for the client's response to drain. */
  draining: boolean;
}

/**
 * Part of an answer to a carried request, written to the client's response: `ended` once the answer is whole (or
 * was cut: the client gets an error that says the request may have run). What the client drained is acknowledged
 * to the owner (`ack`) in ACK_BYTES steps: at once while the response takes more, else once it drains; `current`
 * says whether the request is still carried.
 */
export function writeAnswer(carried: Carried, frame: TunnelFrame, current: () => boolean, ack: (bytes: number) => void): 'open' | 'ended' {
  const { res } = carried;
  if (frame.k === 'head') {
    res.writeHead(frame.status, frame.headers);
    res.flushHeaders();
    return 'open';
  }
  if (frame.k !== 'data') {
    if (frame.k === 'end') res.end();
    else answerLost(res);
    return 'ended';
  }
  if (res.writableEnded || res.destroyed) return 'open';
  res.write(frame.text);
  carried.received += Buffer.byteLength(frame.text);
  if (carried.draining || carried.received - carried.acked < ACK_BYTES) return 'open';
  const send = (): void => {
    carried.draining = false;
    if (!current()) return;
    carried.acked = carried.received;
    ack(carried.acked);
  };
  if (!res.writableNeedDrain) send();
  else {
    carried.draining = true;
    res.once('drain', send);
  }
  return 'open';
}

/**
 * The answer to a carried request part of whose answer was lost on the way (the store was out of reach): 502 with
 * an error that says the request may have run, or, once the headers went out, a cut stream (a client resumes it).
 */
export function answerLost(res: ServerResponse): void {
  if (res.writableEnded || res.destroyed) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(
    rpcError(null, CODES.serverError, 'the answer was lost between replicas (the session store was out of reach): the request may have run'),
  );
  res.writeHead(502, { 'Content-Type': 'application/json' }).end(body);
}
