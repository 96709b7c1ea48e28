import type { FrameError } from '../errors.js';

/**
 * Where a decoder delivers what it finds. Calls happen synchronously inside `write()` and `end()`, in stream
 * order.
 */
export interface DecodeSink {
  message(msg: unknown): void;
  /** A bad frame. Return true to go on decoding after it, false to stop at once (the input is abandoned). */
  invalid(error: FrameError): boolean;
}

/**
 * The pure, synchronous half of a framing: bytes in, messages out. It knows nothing of streams or timers; the
 * stream that feeds it owns policy (skip or fail), and the decoder only reports.
 */
export interface FrameDecoderCore {
  /** Feeds the next bytes of the stream. Returns false when a sink.invalid() call asked to stop. */
  write(chunk: Uint8Array, sink: DecodeSink): boolean;
  /** The input has ended: deliver a final unterminated frame, or report TRUNCATED. */
  end(sink: DecodeSink): void;
  /** Bytes of the unfinished frame seen so far (including any being discarded); 0 between frames. */
  readonly partialBytes: number;
  /** Bytes the decoder holds in memory now. */
  readonly bufferedBytes: number;
}

export interface FrameEncoderCore {
  /** One message as the exact text that goes on the wire. Throws FrameError(NOT_SERIALIZABLE). */
  encode(msg: unknown): string;
}

export interface DecoderLimits {
  /** Largest frame body, in bytes, that decodes. */
  maxMessageBytes: number;
}

/** A framing: how messages are delimited on a byte stream. */
export interface Framing {
  readonly name: string;
  createDecoder(limits: DecoderLimits): FrameDecoderCore;
  createEncoder(): FrameEncoderCore;
}
