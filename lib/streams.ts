import { Transform, type TransformCallback, type TransformOptions } from 'node:stream';
import { FrameError, preview } from './errors.js';
import { debugFrameError } from './debug.js';
import type { DecodeSink, EncoderSettings, FramedEvent, FrameDecoderCore, FrameEncoderCore } from './framings/codec.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_MESSAGE_BYTES, framingByName, type FramingName } from './framings/index.js';
import { keepShape } from './framings/shapes.js';
import { frameProblem, jsonRpcProblem } from './jsonrpc.js';

/** How bytes become messages; the same options for every framing. */
export interface DecodeOptions {
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
   * Deepest nesting of objects and arrays a message may have; a message nested deeper is INVALID_MESSAGE,
   * reported and skipped like any bad frame, so that no recursive walk (JSON.stringify among them) overflows
   * the stack on what a peer sends.
   * @defaultValue 1000
   */
  maxDepth?: number;
  /**
   * What a bad frame does. `'error'`: the stream fails with the FrameError, after every message before it.
   * `'skip'`: the frame is dropped, the FrameError is emitted as `'invalid'`, and decoding goes on.
   * @defaultValue 'error'
   */
  onInvalid?: 'error' | 'skip';
  /**
   * A JSON array is a batch. `'keep'`: it comes out as one array, so round trips stay exact. `'split'`: its
   * elements come out one by one, in order.
   * @defaultValue 'keep'
   */
  batch?: 'keep' | 'split';
  /**
   * Check each message (each batch element) is a JSON-RPC 2.0 request, notification or response; anything
   * else, and an empty batch, is INVALID_MESSAGE. With `batch: 'keep'` a batch with a bad element is rejected
   * whole; with `'split'` only the bad elements are.
   * @defaultValue false
   */
  validate?: boolean;
  /**
   * When part of a message has sat buffered with no new bytes for this long, report PARTIAL_TIMEOUT (fail, or
   * under 'skip' drop the partial message and go on). No timer runs while nothing is partial, and the timer
   * never keeps the process alive.
   * @defaultValue undefined (no timeout)
   */
  partialTimeoutMs?: number;
}

export interface FrameDecoderOptions extends DecodeOptions {
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
 * 'readable', async iteration) goes through read(). That read() is the instance's own, set only when a failure
 * starts to wait: a read() of the class's would cost every message a call, and measured 4-6% of decoding small
 * messages.
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
    this.#wait(error);
    if (!final) callback();
  }

  /** Fails the stream from outside a write (a timer), once the output already pushed has been read. */
  protected failOutsideWrite(error: Error): void {
    if (this.readableLength === 0) this.destroy(error);
    else this.#wait(error);
  }

  /** True once a failure is waiting; input should be dropped. */
  protected get failing(): boolean {
    return this.#failure !== undefined;
  }

  #wait(error: Error): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    const read = this.read;
    // biome-ignore lint/suspicious/noExplicitAny: as in Readable itself; the object side yields messages, the byte side Buffers.
    this.read = (size?: number): any => {
      const chunk: unknown = read.call(this, size);
      if (this.readableLength === 0 && !this.destroyed) this.destroy(error);
      return chunk;
    };
  }
}

/**
 * The shared decoding policy: feeds a framing's pure decoder, and applies onInvalid, batch splitting,
 * validation and the partial-message timer, the same for every framing. Subclasses say what a message
 * becomes on the readable side.
 */
abstract class DecodingTransform extends FailAfterOutput {
  readonly #core: FrameDecoderCore;
  readonly #skip: boolean;
  readonly #split: boolean;
  readonly #validate: boolean;
  readonly #timeoutMs: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Someone listens for 'frame' (a flag, not a listener count per message: this is the hot path). */
  #tracing = false;
  /** The bad frame that stops an `onInvalid: 'error'` decoder, set by the sink during a write. */
  #invalid: FrameError | undefined;
  protected readonly sink: DecodeSink;

  constructor(options: DecodeOptions, streamOptions: TransformOptions) {
    const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    if (!Number.isSafeInteger(maxMessageBytes) || maxMessageBytes < 1) {
      throw new RangeError(`maxMessageBytes must be a positive integer, got ${String(options.maxMessageBytes)}`);
    }
    const onInvalid = options.onInvalid ?? 'error';
    if (onInvalid !== 'error' && onInvalid !== 'skip') {
      throw new TypeError(`onInvalid must be 'error' or 'skip', got ${JSON.stringify(onInvalid)}`);
    }
    const batch = options.batch ?? 'keep';
    if (batch !== 'keep' && batch !== 'split') throw new TypeError(`batch must be 'keep' or 'split', got ${JSON.stringify(batch)}`);
    const timeout = options.partialTimeoutMs;
    if (timeout !== undefined && !(Number.isFinite(timeout) && timeout > 0)) {
      throw new RangeError(`partialTimeoutMs must be a positive number of milliseconds, got ${String(timeout)}`);
    }
    const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    if (!Number.isSafeInteger(maxDepth) || maxDepth < 1) throw new RangeError(`maxDepth must be a positive integer, got ${String(options.maxDepth)}`);
    const framing = framingByName(options.framing);
    super(streamOptions);
    this.#core = framing.createDecoder({ maxMessageBytes, maxDepth });
    this.#skip = onInvalid === 'skip';
    this.#split = batch === 'split';
    this.#validate = options.validate === true;
    this.#timeoutMs = timeout;
    const onNewListener = (event: string | symbol): void => {
      if (event !== 'frame') return;
      this.#tracing = true;
      this.sink.message = this.#checkedMessage;
      this.off('newListener', onNewListener);
    };
    this.on('newListener', onNewListener);
    const stream = this;
    this.sink = {
      // Without a trace, a large frame need not be made into text.
      get textUnused() {
        return !stream.#tracing;
      },
      // With none of the rules in play, a message goes straight on: reading the flags for each one took 4%-6%
      // of decoding small messages. A trace, or a bad frame that stops the decoder, puts the checked way here.
      message: this.#split || this.#validate ? this.#checkedMessage : (msg) => this.deliver(msg),
      invalid: (error) => this.#report(error),
      event: (event) => this.emit('event', event),
    };
  }

  /** What a decoded message becomes on the readable side. */
  protected abstract deliver(msg: unknown): void;

  /** Called after each write and at the end, once the core is done with them. */
  protected afterDecode(): void {}

  /** Bytes of the unfinished message seen so far; 0 between messages. */
  get partialBytes(): number {
    return this.#core.partialBytes;
  }

  /** Bytes of input the decoder holds in memory now (not counting the streams' own buffers). */
  get bufferedBytes(): number {
    return this.#core.bufferedBytes;
  }

  /** The framing's decoder, for what only one framing has (SSE's lastEventId). */
  protected get core(): FrameDecoderCore {
    return this.#core;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    // Input after a failure is dropped: the stream is only waiting for its reader to take what came before.
    if (this.failing) return callback();
    try {
      this.#core.write(chunk, this.sink);
      this.afterDecode();
    } catch (err) {
      return this.failAfterOutput(err as Error, callback);
    }
    if (this.#invalid !== undefined) return this.failAfterOutput(this.#invalid, callback);
    this.#armTimer();
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.#clearTimer();
    if (this.failing) return;
    try {
      this.#core.end(this.sink);
      this.afterDecode();
    } catch (err) {
      return this.failAfterOutput(err as Error, callback, true);
    }
    if (this.#invalid !== undefined) return this.failAfterOutput(this.#invalid, callback, true);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#clearTimer();
    callback(error);
  }

  #report(error: FrameError): boolean {
    debugFrameError('FrameDecoder', error);
    if (this.#skip) {
      this.emit('invalid', error);
      return true;
    }
    this.#invalid ??= error;
    this.sink.message = this.#checkedMessage;
    return false;
  }

  /** A message with every rule of the policy applied: a trace, batches, validation, a bad frame that stopped it. */
  readonly #checkedMessage = (msg: unknown, text: string): void => {
    // The wire text of each frame, for a trace; a batch is one frame.
    if (this.#tracing) this.emit('frame', text);
    this.#accept(msg);
  };

  /**
   * A decoded message, on to the readable side unless a check refuses it. The usual case (no batch split, no
   * validation) is kept to a few lines, so that the engine inlines it into the sink: with the rest of the
   * rules in the same function, decoding small messages took 3-6% longer.
   */
  #accept(msg: unknown): void {
    if (this.#invalid !== undefined) return;
    if (this.#split && Array.isArray(msg)) this.#acceptBatch(msg);
    else if (this.#validate) this.#acceptChecked(msg);
    else this.deliver(msg);
  }

  /** A batch, split: each element on its own, checked when `validate` is set. */
  #acceptBatch(batch: unknown[]): void {
    if (this.#validate && batch.length === 0) return void this.#report(this.#notJsonRpc('an empty batch', batch));
    for (let i = 0; i < batch.length; i++) {
      const element: unknown = batch[i];
      const problem = this.#validate ? jsonRpcProblem(element) : undefined;
      if (problem === undefined) this.deliver(element);
      else if (!this.#report(this.#notJsonRpc(`batch element ${i}: ${problem}`, element))) return;
    }
  }

  #acceptChecked(msg: unknown): void {
    const problem = frameProblem(msg);
    if (problem === undefined) this.deliver(msg);
    else this.#report(this.#notJsonRpc(problem, msg));
  }

  #notJsonRpc(problem: string, msg: unknown): FrameError {
    return new FrameError('INVALID_MESSAGE', `not a JSON-RPC 2.0 message: ${problem}`, this.#core.lastPosition(), preview(JSON.stringify(msg) ?? ''));
  }

  #armTimer(): void {
    if (this.#timeoutMs === undefined) return;
    if (this.#core.partialBytes === 0) return this.#clearTimer();
    if (this.#timer !== undefined) {
      this.#timer.refresh();
      return;
    }
    this.#timer = setTimeout(() => this.#timedOut(), this.#timeoutMs);
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #timedOut(): void {
    this.#timer = undefined;
    if (this.destroyed || this.failing) return;
    const at = this.#core.abandonPartial();
    if (at === undefined) return;
    const error = new FrameError('PARTIAL_TIMEOUT', `no new bytes for ${this.#timeoutMs} ms in the middle of a message`, at, '');
    debugFrameError('FrameDecoder', error);
    if (this.#skip) this.emit('invalid', error);
    else this.failOutsideWrite(error);
  }
}

/**
 * Bytes in, messages out, in any framing, linear in time for any chunking.
 *
 * @example
 * ```ts
 * for await (const msg of child.stdout.pipe(new FrameDecoder())) handle(msg);
 * ```
 *
 * Events: `'data'` (a message), `'invalid'` (a FrameError, with `onInvalid: 'skip'`),
 * `'event'` (an SSE event of another type than `message`: `{ event, data, id }`), `'frame'` (the JSON text
 * of each frame as it came, for a trace: a batch is one frame), `'error'`.
 */
export class FrameDecoder extends DecodingTransform {
  constructor(options: FrameDecoderOptions = {}) {
    super(options, {
      readableObjectMode: true,
      readableHighWaterMark: options.readableHighWaterMark ?? 16,
      writableHighWaterMark: options.writableHighWaterMark ?? 64 * 1024,
    });
    keepShape(FrameDecoder, () => new FrameDecoder());
  }

  protected deliver(msg: unknown): void {
    this.push(msg);
  }

  /** With `framing: 'sse'`: the id of the last event dispatched, for a reconnection's Last-Event-ID header. */
  get lastEventId(): string | undefined {
    return (this.core as { lastEventId?: string }).lastEventId;
  }

  /** With `framing: 'sse'`: the reconnection time the server asked for with `retry:`, in milliseconds. */
  get retry(): number | undefined {
    return (this.core as { retry?: number }).retry;
  }
}

export interface FrameConverterOptions extends DecodeOptions {
  /** The framing written out. */
  to: FramingName;
  /** For `to: 'sse'`: an id for each message's event. */
  eventId?: EncoderSettings['eventId'];
}

/**
 * Bytes in one framing to bytes in another (`framing` is the input's), with the decoding policy of
 * FrameDecoder. It composes the two framings' pure codecs, not two streams; the frames decoded from one chunk go
 * out as one chunk.
 *
 * @example
 * ```ts
 * // Content-Length frames on stdin, ndjson lines on stdout.
 * await pipeline(process.stdin, new FrameConverter({ framing: 'content-length', to: 'ndjson' }), process.stdout);
 * ```
 */
export class FrameConverter extends DecodingTransform {
  readonly #encoder: FrameEncoderCore;
  #out = '';

  constructor(options: FrameConverterOptions) {
    super(options, {});
    this.#encoder = framingByName(options.to).createEncoder(options.eventId === undefined ? {} : { eventId: options.eventId });
    keepShape(FrameConverter, () => new FrameConverter({ ...(options.framing === undefined ? {} : { framing: options.framing }), to: options.to }));
  }

  protected deliver(msg: unknown): void {
    this.#out += this.#encoder.encode(msg);
  }

  protected override afterDecode(): void {
    if (this.#out === '') return;
    this.push(this.#out);
    this.#out = '';
  }
}

export interface FrameEncoderOptions {
  /**
   * How messages are delimited on the wire.
   * @defaultValue 'ndjson'
   */
  framing?: FramingName;
  /** For `framing: 'sse'`: an id for each message's event (its `id:` line); none by default. */
  eventId?: EncoderSettings['eventId'];
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

/**
 * Messages in, bytes out. A message that cannot be framed fails the stream with a FrameError, after the bytes
 * of the messages before it.
 *
 * @example
 * ```ts
 * const encoder = new FrameEncoder();
 * encoder.pipe(child.stdin);
 * encoder.write({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
 * ```
 */
export class FrameEncoder extends FailAfterOutput {
  readonly #core: FrameEncoderCore;

  constructor(options: FrameEncoderOptions = {}) {
    const framing = framingByName(options.framing);
    super({
      writableObjectMode: true,
      writableHighWaterMark: options.writableHighWaterMark ?? 16,
      readableHighWaterMark: options.readableHighWaterMark ?? 64 * 1024,
    });
    this.#core = framing.createEncoder(options.eventId === undefined ? {} : { eventId: options.eventId });
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

export type { FramedEvent, FramingName };
