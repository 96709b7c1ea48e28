/*
 * The framing on Web Streams, for browsers, Deno, Bun and workers (and Node). FrameDecoderStream
 * takes Uint8Array chunks and gives messages; FrameEncoderStream takes messages and gives Uint8Array chunks, byte
 * for byte what frame() writes. Bad input is never silent: with `onInvalid: 'error'` (the default) the stream errors
 * with a FrameError, with 'skip' each FrameError goes to `oninvalid` and decoding goes on at the next line.
 *
 * This entry and every module it imports use no node: module and no Node global (a test holds it so), so that the
 * built file runs unbundled as an ES module anywhere. It frames NDJSON (MCP's stdio framing), Content-Length
 * (LSP's) and SSE (MCP's HTTP transports': an event of another type than `message` goes to `onevent`).
 */
import { FrameError } from '../errors.js';
import type { DecodeSink, FramedEvent, FrameDecoderCore } from '../framings/codec.js';
import { serialize } from '../framings/json.js';
import { frameProblem } from '../jsonrpc.js';
import { preview } from '../redaction.js';
import { frameContentLengthBytes, WebContentLengthDecoder } from './content-length.js';
import { WebNdjsonDecoder } from './ndjson.js';
import { frameSseBytes, WebSseDecoder } from './sse.js';

/** The framings this entry speaks. */
export type WebFraming = 'ndjson' | 'content-length' | 'sse';

/** The largest message a decoder takes by default, as the Node streams' (64 MiB). */
const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface FrameDecoderStreamOptions {
  /** @defaultValue 'ndjson' */
  framing?: WebFraming;
  /** @defaultValue 64 MiB */
  maxMessageBytes?: number;
  /** 'error': the stream errors at the first bad frame; 'skip': it is reported to `oninvalid` and skipped. @defaultValue 'error' */
  onInvalid?: 'error' | 'skip';
  /** With 'skip': each bad frame's FrameError. */
  oninvalid?: (error: FrameError) => void;
  /** Check each message is JSON-RPC 2.0 (a bad one is INVALID_MESSAGE). @defaultValue false */
  validate?: boolean;
  /**
   * With 'sse': each event of another type than `message` (MCP's legacy `endpoint` event carries a URL), as it is
   * decoded (the messages before it may not have been read yet).
   */
  onevent?: (event: FramedEvent) => void;
}

/** One message as NDJSON: its compact JSON and exactly one `\n`. */
export function frame(msg: unknown): string {
  return `${serialize(msg)}\n`;
}

function decoderOf(framing: string, maxMessageBytes: number): FrameDecoderCore {
  if (framing !== 'ndjson' && framing !== 'content-length' && framing !== 'sse')
    throw new TypeError(`mcp-frame/web frames ndjson, content-length and sse; got framing ${JSON.stringify(framing)}`);
  if (!Number.isInteger(maxMessageBytes) || maxMessageBytes < 1)
    throw new TypeError(`maxMessageBytes is a whole number of bytes, got ${maxMessageBytes}`);
  if (framing === 'sse') return new WebSseDecoder({ maxMessageBytes });
  return framing === 'ndjson' ? new WebNdjsonDecoder({ maxMessageBytes }) : new WebContentLengthDecoder({ maxMessageBytes });
}

/**
 * Uint8Array chunks in, messages out: a readable and writable pair, as a TransformStream is (`pipeThrough` takes
 * it). Not a TransformStream: erroring one throws away the messages it holds that were not read yet, and a message
 * next to a bad frame must not be lost. Here the messages decoded wait in the pair's own queue and go to the
 * reader as it reads; the error of the first bad frame (in 'error' mode) reaches the reader only once it has read
 * every message before it. A write resolves once the reader has taken what it decoded (so a reader that stops
 * holds the writer: backpressure), and rejects with the error once the stream failed.
 */
export class FrameDecoderStream {
  readonly readable: ReadableStream<unknown>;
  readonly writable: WritableStream<Uint8Array>;
  readonly #core: FrameDecoderCore;

  constructor(options: FrameDecoderStreamOptions = {}) {
    const core = decoderOf(options.framing ?? 'ndjson', options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
    this.#core = core;
    const skip = options.onInvalid === 'skip';
    const queue: unknown[] = [];
    /** The stream's end: the error it failed with (the first bad frame's, or the reader's cancel), or done. */
    let failure: unknown;
    let failed = false;
    let done = false;
    /** A reader waiting for messages; writes waiting for the reader to take theirs. */
    let waiting: (() => void) | undefined;
    const taken: Array<() => void> = [];
    let reader!: ReadableStreamDefaultController<unknown>;
    const fail = (error: unknown): void => {
      if (failed) return;
      failed = true;
      failure = error;
    };
    const report = (error: FrameError): boolean => {
      if (!skip) {
        fail(error);
        return false;
      }
      options.oninvalid?.(error);
      return true;
    };
    const sink: DecodeSink = {
      message(msg) {
        if (failed) return;
        const problem = options.validate === true ? frameProblem(msg) : undefined;
        if (problem === undefined) queue.push(msg);
        else
          report(
            new FrameError('INVALID_MESSAGE', `not a JSON-RPC 2.0 message: ${problem}`, core.lastPosition(), preview(JSON.stringify(msg) ?? '')),
          );
      },
      invalid: report,
      event(event) {
        if (!failed) options.onevent?.(event);
      },
    };
    /** The reader, when it waits, gets what there is: the messages queued, else the failure or the end. */
    const hand = (): void => {
      if (waiting === undefined) return;
      if (queue.length > 0) {
        for (const msg of queue) reader.enqueue(msg);
        queue.length = 0;
        for (const resolve of taken.splice(0)) resolve();
      } else if (failed) reader.error(failure);
      else if (done) reader.close();
      else return;
      const resolve = waiting;
      waiting = undefined;
      resolve();
    };
    /** Resolves once the reader took what is queued now; rejects with the failure once there is one. */
    const takenByReader = async (): Promise<void> => {
      if (queue.length > 0) await new Promise<void>((resolve) => taken.push(resolve));
      if (failed) throw failure;
    };
    this.readable = new ReadableStream<unknown>(
      {
        start(controller) {
          reader = controller;
        },
        // Called only when a read waits and nothing is queued in the stream: a moment it may be errored.
        pull() {
          return new Promise<void>((resolve) => {
            waiting = resolve;
            hand();
          });
        },
        cancel(reason) {
          fail(reason ?? new TypeError('the reader cancelled'));
          queue.length = 0;
          for (const resolve of taken.splice(0)) resolve();
        },
      },
      { highWaterMark: 0 },
    );
    this.writable = new WritableStream<Uint8Array>({
      write(chunk) {
        if (!(chunk instanceof Uint8Array)) throw new TypeError(`FrameDecoderStream takes Uint8Array chunks, got ${typeof chunk}`);
        if (!failed) core.write(chunk, sink);
        hand();
        return takenByReader();
      },
      close() {
        if (!failed) core.end(sink);
        done = true;
        hand();
        return takenByReader();
      },
      abort(reason) {
        fail(reason);
        hand();
      },
    });
  }

  /** With 'sse': the id of the last event dispatched, for a reconnection's Last-Event-ID; undefined for another framing. */
  get lastEventId(): string | undefined {
    return this.#core instanceof WebSseDecoder ? this.#core.lastEventId : undefined;
  }
}

/**
 * Messages in, Uint8Array chunks out: each message's frame, byte for byte what frame() (NDJSON),
 * frameContentLength() or frameSse() writes. A value with no JSON form errors the stream (NOT_SERIALIZABLE).
 */
export class FrameEncoderStream extends TransformStream<unknown, Uint8Array> {
  constructor(options: { framing?: WebFraming } = {}) {
    const framing = options.framing ?? 'ndjson';
    decoderOf(framing, DEFAULT_MAX_MESSAGE_BYTES);
    const encoder = new TextEncoder();
    const encode = framing === 'ndjson' ? (msg: unknown) => encoder.encode(frame(msg)) : framing === 'sse' ? frameSseBytes : frameContentLengthBytes;
    super({
      transform(msg, controller) {
        controller.enqueue(encode(msg));
      },
    });
  }
}
