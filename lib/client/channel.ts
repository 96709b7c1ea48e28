/*
 * A channel moves messages: it sends one, delivers what arrives, reports bad frames, and closes. The session
 * (Connection) never knows which channel carries it.
 */
import type { Caller } from '../protocol/caller.js';
import type { ProtocolEra } from '../protocol/modern.js';
import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import type { FrameError } from '../errors.js';
import type { FrameEncoderCore } from '../framings/codec.js';
import { DEFAULT_MAX_MESSAGE_BYTES, framingByName, type FramingName } from '../framings/index.js';
import { FrameDecoder } from '../streams.js';
import { ConnectionError, type ExitStatus } from './errors.js';

/** Which way a frame crossed a channel. */
export type Direction = 'send' | 'receive';

/**
 * What carries a Connection's messages.
 *
 * Events: 'message' (a decoded message; a batch arrives as its elements), 'invalid' (FrameError: a bad frame
 * from the peer, skipped), 'wire' (direction and the JSON text of a frame as it crossed), 'end' (no message
 * can arrive any more: requests still waiting will get no answer), 'close' (ExitStatus, once everything is
 * released). A channel may also emit 'stderr' (a line), when its peer is a process, and 'undeliverable' (the
 * ids of requests whose answers can no longer come, and the ConnectionError why), when it loses the answers
 * of some requests but goes on.
 */
export interface Channel extends EventEmitter {
  /** The peer's name in error messages. */
  readonly name: string;
  /** How the messages travel, where the channel says (Connection.transport). */
  readonly transport?: 'stdio' | 'streamable-http' | 'sse';
  /**
   * Frames `msg` and hands it on; resolves once the channel can take more. A message with no JSON form
   * rejects with FrameError(NOT_SERIALIZABLE) before anything is written, and the channel goes on. `caller`: whom
   * the message is sent for (RequestOptions.caller), which a channel standing for several callers (a view of a
   * shared gateway) tells apart by; others ignore it.
   */
  send(msg: unknown, caller?: Caller): Promise<void>;
  /** Ends the channel; resolves once its peer is gone. */
  close(): Promise<ExitStatus>;
  /** Why the channel cannot carry a message now, as an error for a request that waited for one. */
  endError(what: string): ConnectionError;
  /** The process id, for a channel to a child process. */
  readonly pid?: number | undefined;
  /** The peer's last stderr lines, for a channel to a child process. */
  readonly stderrTail?: string[];
  /**
   * Text from the peer without the secrets configured for it (header values, URL query values), for a remote
   * channel: what the session puts in errors passes here.
   */
  scrub?(text: string): string;
  /**
   * A remote channel's sign-in (with `auth`): whether it waits for the user now, and how long it has in all (ms).
   * Request timeouts and the handshake deadline leave that time out.
   */
  readonly signIn?: { readonly signingIn: boolean; readonly waitedMs: number } | undefined;
  /**
   * Stops reading the peer until the returned function is called (each hold released once), so that a consumer
   * slower than the peer (a host that does not read) leaves the peer's output in its pipe or socket, not here.
   */
  holdInput?(): () => void;
  /** The eras the channel can carry; undefined: both. (The deprecated HTTP+SSE transport carries only the legacy one.) */
  readonly eras?: readonly ProtocolEra[];
  /**
   * True when every request gets an answer of some kind (HTTP: a status at least), so that silence to the era
   * probe is an outage, never the legacy verdict it is on a pipe.
   */
  readonly answersEveryRequest?: boolean;
  /** For a channel that sends each era its own way (HTTP headers): the era, and the modern revision, from now on. */
  useProtocol?(era: ProtocolEra, version: string | undefined): void;
}

export interface StreamChannelOptions {
  /** A name for the peer in error messages. @defaultValue 'peer' */
  name?: string;
  /** @defaultValue 'ndjson' */
  framing?: FramingName;
  /** @defaultValue 64 MiB */
  maxMessageBytes?: number;
  /**
   * Bytes of frames waiting for the output to take them before send() rejects with SEND_QUEUE_FULL. While more
   * than a little waits (256 messages or 1 MiB), the input is not read either: a peer that does not read what
   * it is sent is not read, so answers to its requests cannot pile up.
   * @defaultValue 64 MiB
   */
  maxQueuedBytes?: number;
}

/** Above this many waiting messages or bytes, the input stops being read until the output drains. */
const PAUSE_MESSAGES = 256;
const PAUSE_BYTES = 1024 * 1024;

interface Queued {
  /** The frame still to write; empty once written, while it waits for 'drain' to resolve. */
  text: string;
  bytes: number;
  /** A response to the peer's request (not one of our own requests or notifications). */
  answer: boolean;
  resolve(): void;
  reject(error: Error): void;
}

/**
 * A channel over a pair of byte streams: frames are read from `input` by a FrameDecoder (stray output is
 * reported on 'invalid' and skipped, batches arrive as their elements) and written to `output`. Sends wait
 * in one queue with one 'drain' listener, so that a thousand waiting sends cost what one does.
 */
export class StreamChannel extends EventEmitter implements Channel {
  readonly name: string;
  readonly #input: Readable;
  readonly #output: Writable;
  readonly #decoder: FrameDecoder;
  readonly #encoder: FrameEncoderCore;
  readonly #maxQueued: number;
  readonly #queue: Queued[] = [];
  #queuedBytes = 0;
  /** Of the queue, the answers to the peer's requests: only they throttle the input (see #throttle). */
  #queuedAnswers = 0;
  #queuedAnswerBytes = 0;
  #waitingForDrain = false;
  #paused = false;
  /** Holds on the input taken by holdInput() and not released yet. */
  #holds = 0;
  #ended: ConnectionError | undefined;
  #outputError: ConnectionError | undefined;
  #closed = false;

  constructor(input: Readable, output: Writable, options: StreamChannelOptions = {}) {
    super();
    this.name = options.name ?? 'peer';
    this.#input = input;
    this.#output = output;
    this.#maxQueued = options.maxQueuedBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.#encoder = framingByName(options.framing).createEncoder();
    this.#decoder = new FrameDecoder({
      framing: options.framing ?? 'ndjson',
      onInvalid: 'skip',
      batch: 'split',
      ...(options.maxMessageBytes === undefined ? {} : { maxMessageBytes: options.maxMessageBytes }),
    });
    this.#decoder.on('data', (msg: unknown) => this.emit('message', msg));
    this.#decoder.on('invalid', (err: FrameError) => this.emit('invalid', err));
    // A decoder in skip mode fails only when its input does; that is the end of the channel.
    this.#decoder.on('error', () => this.#end());
    this.#decoder.on('end', () => this.#end());
    this.#decoder.on('close', () => this.#end());
    forwardWhenListened(this, 'wire', () => this.#decoder.on('frame', (text: string) => this.emit('wire', 'receive', text)));
    output.on('drain', () => this.#drained());
    // A peer that goes away while we write (EPIPE) makes further sends fail; the error must not be uncaught.
    output.on('error', (err) => {
      this.#outputError ??= new ConnectionError('ENDED', `"${this.name}" stopped reading its input`, { cause: err });
      this.#failQueue(this.#outputError);
    });
    input.pipe(this.#decoder);
  }

  send(msg: unknown): Promise<void> {
    if (this.#ended !== undefined || this.#closed || this.#outputError !== undefined) return Promise.reject(this.endError('cannot send'));
    let text: string;
    try {
      text = this.#encoder.encode(msg);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.listenerCount('wire') > 0) this.emit('wire', 'send', text);
    if (this.#queue.length === 0 && !this.#waitingForDrain) {
      if (this.#output.write(text)) return Promise.resolve();
      this.#waitForDrain();
      return new Promise((resolve, reject) => this.#queue.unshift({ text: '', bytes: 0, answer: false, resolve, reject }));
    }
    const bytes = Buffer.byteLength(text);
    if (this.#queuedBytes + bytes > this.#maxQueued) {
      return Promise.reject(
        new ConnectionError('SEND_QUEUE_FULL', `cannot send: "${this.name}" has not read the last ${this.#queuedBytes} bytes sent to it`),
      );
    }
    this.#queuedBytes += bytes;
    const answer = isAnswer(msg);
    if (answer) {
      this.#queuedAnswers++;
      this.#queuedAnswerBytes += bytes;
    }
    const sent = new Promise<void>((resolve, reject) => this.#queue.push({ text, bytes, answer, resolve, reject }));
    this.#throttle();
    return sent;
  }

  /** True while frames wait for the output to drain: a producer should wait for its last send() to resolve. */
  get backedUp(): boolean {
    return this.#waitingForDrain;
  }

  /** Ends the output and stops reading; resolves at once, as there is no process to wait for. */
  close(): Promise<ExitStatus> {
    if (!this.#closed) {
      this.#closed = true;
      this.#failQueue(new ConnectionError('CLOSED', `cannot send: the connection to "${this.name}" is closing`));
      this.#output.end();
      this.#decoder.destroy();
      // The input may be paused (a hold, or the throttle): unpiped, it flows to its end and closes, instead of
      // staying open, paused, as a handle that keeps the process alive.
      this.#input.unpipe(this.#decoder);
      this.#input.resume();
      this.emit('close', { code: null, signal: null } satisfies ExitStatus);
    }
    return Promise.resolve({ code: null, signal: null });
  }

  endError(what: string): ConnectionError {
    if (this.#closed) return new ConnectionError('CLOSED', `${what}: the connection to "${this.name}" is closing`);
    const cause = this.#ended ?? this.#outputError;
    return new ConnectionError('ENDED', `${what}: ${cause === undefined ? `"${this.name}" is not connected` : cause.message}`);
  }

  /** Ends the output without closing the channel: the peer sees the end of its input. */
  endOutput(): void {
    this.#failQueue(new ConnectionError('CLOSED', `cannot send: the connection to "${this.name}" is closing`));
    this.#output.end();
  }

  /**
   * Stops reading what the peer sends until the returned function is called (each hold is released once, and
   * reading goes on when none is left): for a consumer that cannot take the peer's messages as fast as they
   * come, such as a slow HTTP client of `serve`. The peer then blocks on its own writes.
   */
  holdInput(): () => void {
    this.#holds++;
    this.#throttle();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holds--;
      this.#throttle();
    };
  }

  /** No more input: nothing waiting can be answered. */
  #end(): void {
    if (this.#ended !== undefined) return;
    this.#ended = new ConnectionError('ENDED', `"${this.name}" closed its output`);
    this.#failQueue(this.#ended);
    this.emit('end');
  }

  #waitForDrain(): void {
    this.#waitingForDrain = true;
    this.#throttle();
  }

  /**
   * Stops reading what the peer sends while it leaves many of our answers to its requests unread
   * (backpressure both ways), so that answers to a flood of its requests cannot pile up. Only answers count:
   * our own requests waiting for the peer to read them must not stop us reading its answers to them, or a peer
   * that stops reading until its output is read would deadlock with us (10,000 concurrent requests did). A
   * little is let wait without stopping, so that a peer that writes while we write does not deadlock with us.
   */
  #throttle(): void {
    const full = this.#holds > 0 || this.#queuedAnswers > PAUSE_MESSAGES || this.#queuedAnswerBytes > PAUSE_BYTES;
    if (full && !this.#paused) this.#decoder.pause();
    else if (!full && this.#paused && !this.#closed) this.#decoder.resume();
    this.#paused = full;
  }

  #drained(): void {
    if (!this.#waitingForDrain) return;
    this.#waitingForDrain = false;
    while (this.#queue.length > 0) {
      const item = this.#queue.shift()!;
      if (item.text !== '') {
        this.#queuedBytes -= item.bytes;
        if (item.answer) {
          this.#queuedAnswers--;
          this.#queuedAnswerBytes -= item.bytes;
        }
        if (!this.#output.write(item.text)) {
          // Handed on, but the output is full again: it resolves at the next drain.
          this.#queue.unshift({ text: '', bytes: 0, answer: false, resolve: item.resolve, reject: item.reject });
          return this.#waitForDrain();
        }
      }
      item.resolve();
    }
    this.#throttle();
  }

  #failQueue(error: Error): void {
    for (const item of this.#queue.splice(0)) item.reject(error);
    this.#queuedBytes = 0;
    this.#queuedAnswers = 0;
    this.#queuedAnswerBytes = 0;
  }
}

/** A response (or a batch of them): an answer to the peer's request, with no method. */
function isAnswer(msg: unknown): boolean {
  const first = Array.isArray(msg) ? msg[0] : msg;
  return typeof first === 'object' && first !== null && !('method' in first);
}

/** Calls `attach` once, the first time a listener for `event` is added to `emitter`. */
export function forwardWhenListened(emitter: EventEmitter, event: string, attach: () => void): void {
  const onNew = (name: string | symbol): void => {
    if (name !== event) return;
    emitter.off('newListener', onNew);
    attach();
  };
  emitter.on('newListener', onNew);
}
