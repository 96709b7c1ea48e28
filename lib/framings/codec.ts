import type { FrameError, FrameErrorPosition } from '../errors.js';

/**
 * Where a decoder delivers what it finds. Calls happen synchronously inside `write()` and `end()`, in stream
 * order.
 */
export interface DecodeSink {
  /**
   * A message, and the JSON text it was parsed from (a line's text may keep its CR); '' when `textUnused` is true
   * and the frame was parsed without making its whole text.
   */
  message(msg: unknown, text: string): void;
  /**
   * The sink does not use message()'s text: a decoder may then parse a frame of megabytes from its bytes (see
   * parseLarge), never making the frame's whole text. Read at each large frame, so it may change between frames.
   */
  readonly textUnused?: boolean;
  /** A bad frame. Return true to go on decoding after it, false to stop at once (the input is abandoned). */
  invalid(error: FrameError): boolean;
  /** An event that carries no message (an SSE event of a type other than `message`). */
  event?(event: FramedEvent): void;
}

/** A non-message event from an event-stream framing. */
export interface FramedEvent {
  event: string;
  data: string;
  /** The last event id at the time, when there is one. */
  id?: string;
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
  /** Where the frame last passed to sink.message() started, for errors found after deframing (validation). */
  lastPosition(): FrameErrorPosition;
  /**
   * Gives up on the unfinished frame, including whatever of it is still to come, and decodes on from the next
   * frame. Returns where the abandoned frame started, or undefined when nothing was unfinished.
   */
  abandonPartial(): FrameErrorPosition | undefined;
}

export interface FrameEncoderCore {
  /** One message as the exact text that goes on the wire. Throws FrameError(NOT_SERIALIZABLE). */
  encode(msg: unknown): string;
}

export interface DecoderLimits {
  /** Largest frame body, in bytes, that decodes. */
  maxMessageBytes: number;
  /** Deepest nesting of objects and arrays a message may have. @defaultValue DEFAULT_MAX_DEPTH (1000) */
  maxDepth?: number;
}

export interface EncoderSettings {
  /** For event-stream framings: an id for each message's event; none by default. */
  eventId?: (msg: unknown, seq: number) => string | number | undefined;
}

/** A framing: how messages are delimited on a byte stream. */
export interface Framing {
  readonly name: string;
  createDecoder(limits: DecoderLimits): FrameDecoderCore;
  createEncoder(settings?: EncoderSettings): FrameEncoderCore;
}
