import { Transform, type TransformCallback, type TransformOptions } from 'node:stream';
import type { FrameError } from './errors.js';
import type { DecodeSink, FrameDecoderCore, FrameEncoderCore, Framing } from './framings/codec.js';
import { ndjson } from './framings/ndjson.js';

/** Every framing the streams know, by name. */
const FRAMINGS: Record<string, Framing> = { ndjson };
export type FramingName = 'ndjson';

function framingByName(name: string | undefined): Framing {
  const framing = FRAMINGS[name ?? 'ndjson'];
  if (framing === undefined) {
    throw new TypeError(`unknown framing ${JSON.stringify(name)}; expected one of: ${Object.keys(FRAMINGS).join(', ')}`);
  }
  return framing;
}

export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface FrameDecoderOptions {
  /**
   * How messages are delimited on the wire.
   * @defaultValue 'ndjson'
   */
  framing?: FramingName;
  /**
   * Largest message body, in bytes, that decodes; one byte more is MESSAGE_TOO_LARGE. A message that will be
   * rejected is not buffered much past this.
   * @defaultValue 64 MiB
   */
  maxMessageBytes?: number;
  /**
   * What a bad frame does. `'error'`: the stream fails with the FrameError, after every message before it.
   * `'skip'`: the frame is dropped, the FrameError is emitted as `'invalid'`, and decoding goes on.
   * @defaultValue 'error'
   */
  onInvalid?: 'error' | 'skip';
  /**
   * How many decoded messages the readable side buffers before it stops reading input.
   * @defaultValue 16
   */
  readableHighWaterMark?: number;
  /**
   * How many bytes the writable side buffers before `write()` returns false.
   * @defaultValue 64 KiB
   */
  writableHighWaterMark?: number;
}

/**
 * A Transform that fails only after its reader has taken everything it pushed before the failure.
 *
 * A plain Transform destroys itself when _transform passes an error, and a destroyed stream's async iterator
 * stops reading its buffer: a `for await` consumer would lose messages that were decoded before a bad frame,
 * depending on timing. So while pushed output is still buffered, the failure waits, input is dropped, and the
 * read() that empties the buffer destroys the stream. Every way of consuming a Readable (pipe, 'data',
 * 'readable', async iteration) goes through read().
 */
class FailAfterOutput extends Transform {
  #failure: Error | undefined;

  constructor(options: TransformOptions) {
    super(options);
  }

  /**
   * Fails the stream once the output already pushed has been read. From _flush (`final`), a deferred failure
   * leaves the callback uncalled: calling it would end the readable side cleanly.
   */
  protected failAfterOutput(error: Error, callback: TransformCallback, final = false): void {
    if (this.readableLength === 0) return callback(error);
    this.#failure = error;
    if (!final) callback();
  }

  /** True once a failure is waiting; input should be dropped. */
  protected get failing(): boolean {
    return this.#failure !== undefined;
  }

  // `any`, as in Readable itself: the object side yields messages, the byte side Buffers.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override read(size?: number): any {
    const chunk: unknown = super.read(size);
    if (this.#failure !== undefined && this.readableLength === 0 && !this.destroyed) this.destroy(this.#failure);
    return chunk;
  }
}

/**
 * Bytes in, messages out. Feeds a framing's pure decoder and pushes what it yields; skip-or-fail policy lives
 * here, the same for every framing.
 *
 * Events: `'data'` (a message), `'invalid'` (a FrameError, with `onInvalid: 'skip'`), `'error'`.
 */
export class FrameDecoder extends FailAfterOutput {
  readonly #core: FrameDecoderCore;
  readonly #skip: boolean;
  readonly #sink: DecodeSink;
  /** The bad frame that stops an `onInvalid: 'error'` decoder, set by the sink during a write. */
  #invalid: FrameError | undefined;

  constructor(options: FrameDecoderOptions = {}) {
    const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    if (!Number.isSafeInteger(maxMessageBytes) || maxMessageBytes < 1) {
      throw new RangeError(`maxMessageBytes must be a positive integer, got ${String(options.maxMessageBytes)}`);
    }
    const onInvalid = options.onInvalid ?? 'error';
    if (onInvalid !== 'error' && onInvalid !== 'skip') {
      throw new TypeError(`onInvalid must be 'error' or 'skip', got ${JSON.stringify(onInvalid)}`);
    }
    super({
      readableObjectMode: true,
      readableHighWaterMark: options.readableHighWaterMark ?? 16,
      writableHighWaterMark: options.writableHighWaterMark ?? 64 * 1024,
    });
    this.#core = framingByName(options.framing).createDecoder({ maxMessageBytes });
    this.#skip = onInvalid === 'skip';
    this.#sink = {
      message: (msg) => {
        this.push(msg);
      },
      invalid: (error) => {
        if (this.#skip) {
          this.emit('invalid', error);
          return true;
        }
        this.#invalid = error;
        return false;
      },
    };
  }

  /** Bytes of the unfinished message seen so far; 0 between messages. */
  get partialBytes(): number {
    return this.#core.partialBytes;
  }

  /** Bytes of input the decoder holds in memory now (not counting the streams' own buffers). */
  get bufferedBytes(): number {
    return this.#core.bufferedBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    // Input after a failure is dropped: the stream is only waiting for its reader to take what came before.
    if (this.failing) return callback();
    try {
      this.#core.write(chunk, this.#sink);
    } catch (err) {
      return this.failAfterOutput(err as Error, callback);
    }
    if (this.#invalid !== undefined) return this.failAfterOutput(this.#invalid, callback);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    if (this.failing) return;
    try {
      this.#core.end(this.#sink);
    } catch (err) {
      return this.failAfterOutput(err as Error, callback, true);
    }
    if (this.#invalid !== undefined) return this.failAfterOutput(this.#invalid, callback, true);
    callback();
  }
}

export interface FrameEncoderOptions {
  /**
   * How messages are delimited on the wire.
   * @defaultValue 'ndjson'
   */
  framing?: FramingName;
  /**
   * How many messages the writable side buffers before `write()` returns false.
   * @defaultValue 16
   */
  writableHighWaterMark?: number;
  /**
   * How many bytes the readable side buffers before the encoder stops taking messages.
   * @defaultValue 64 KiB
   */
  readableHighWaterMark?: number;
}

/** Messages in, bytes out. A message that cannot be framed fails the stream with a FrameError. */
export class FrameEncoder extends FailAfterOutput {
  readonly #core: FrameEncoderCore;

  constructor(options: FrameEncoderOptions = {}) {
    super({
      writableObjectMode: true,
      writableHighWaterMark: options.writableHighWaterMark ?? 16,
      readableHighWaterMark: options.readableHighWaterMark ?? 64 * 1024,
    });
    this.#core = framingByName(options.framing).createEncoder();
  }

  override _transform(msg: unknown, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.failing) return callback();
    let text: string;
    try {
      text = this.#core.encode(msg);
    } catch (err) {
      return this.failAfterOutput(err as Error, callback);
    }
    callback(null, text);
  }

  override _flush(callback: TransformCallback): void {
    if (!this.failing) callback();
  }
}
