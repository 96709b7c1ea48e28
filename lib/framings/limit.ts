/*
 * The size limit of a frame, on any runtime (no node: module, no Node global): the Node decoders and those of
 * mcp-frame/web hold a message to maxMessageBytes the same way.
 */
import { FrameError, type FrameErrorPosition, preview } from '../errors.js';

/**
 * The size rule, the same for every framing: a message's body may hold `max` bytes; one byte more is
 * MESSAGE_TOO_LARGE. While a frame is still arriving its bytes also hold framing that is not message (a BOM,
 * a CR, a field name), known only when the frame ends; so an unfinished frame is rejected early only once it
 * passes `max + slack`, and the exact check runs when it ends. `slack` is the most framing bytes a framing
 * holds beside a message.
 */
export class SizeLimit {
  constructor(
    readonly max: number,
    readonly slack: number,
  ) {}

  /** Bytes of an unfinished frame (framing included) that can no longer hold a message within the limit. */
  heldTooLong(bytes: number): boolean {
    return bytes > this.max + this.slack;
  }

  /** A complete message body of `bytes` is over the limit. */
  over(bytes: number): boolean {
    return bytes > this.max;
  }

  /** The most bytes a decoder ever holds for one frame. */
  get holdCap(): number {
    return this.max + this.slack;
  }

  error(what: string, position: FrameErrorPosition, head: string | Uint8Array): FrameError {
    return new FrameError('MESSAGE_TOO_LARGE', `${what} is larger than maxMessageBytes (${this.max})`, position, preview(head));
  }
}
