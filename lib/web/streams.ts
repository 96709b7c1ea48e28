/*
 * The framing on Web Streams, for browsers, Deno, Bun and workers (and Node). FrameDecoderStream
 * takes Uint8Array chunks and gives messages; FrameEncoderStream takes messages and gives Uint8Array chunks, byte
 * for byte what frame() writes. Bad input is never silent: with `onInvalid: 'error'` (the default) the stream errors
 * with a FrameError, with 'skip' each FrameError goes to `oninvalid` and decoding goes on at the next line.
 *
 * This entry and every module it imports use no node: module and no Node global (a test holds it so), so that the
 * built file runs unbundled as an ES module anywhere. It frames NDJSON (MCP's stdio framing) for now; the
 * Content-Length and SSE framings are the Node streams' (mcp-frame) until their decoders are written to the same
 * rule.
 */
import { FrameError } from '../errors.js';
import type { DecodeSink, FrameDecoderCore } from '../framings/codec.js';
import { serialize } from '../framings/json.js';
import { frameProblem } from '../jsonrpc.js';
import { preview } from '../redaction.js';
import { WebNdjsonDecoder } from './ndjson.js';

/** The framings this entry speaks. */
export type WebFraming = 'ndjson';

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
}

/** One message as NDJSON: its compact JSON and exactly one `\n`. */
export function frame(msg: unknown): string {
  return `${serialize(msg)}\n`;
}

function decoderOf(framing: string, maxMessageBytes: number): FrameDecoderCore {
  if (framing !== 'ndjson')
    throw new TypeError(`mcp-frame/web frames ndjson; ${JSON.stringify(framing)} is the Node streams' (mcp-frame's FrameDecoder) for now`);
  if (!Number.isInteger(maxMessageBytes) || maxMessageBytes < 1)
    throw new TypeError(`maxMessageBytes is a whole number of bytes, got ${maxMessageBytes}`);
  return new WebNdjsonDecoder({ maxMessageBytes });
}

/** Uint8Array chunks in, messages out. */
export class FrameDecoderStream extends TransformStream<Uint8Array, unknown> {
  constructor(options: FrameDecoderStreamOptions = {}) {
    const core = decoderOf(options.framing ?? 'ndjson', options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
    const skip = options.onInvalid === 'skip';
    let controller!: TransformStreamDefaultController<unknown>;
    const report = (error: FrameError): boolean => {
      if (!skip) {
        controller.error(error);
        return false;
      }
      options.oninvalid?.(error);
      return true;
    };
    const sink: DecodeSink = {
      message(msg) {
        const problem = options.validate === true ? frameProblem(msg) : undefined;
        if (problem === undefined) controller.enqueue(msg);
        else
          report(
            new FrameError('INVALID_MESSAGE', `not a JSON-RPC 2.0 message: ${problem}`, core.lastPosition(), preview(JSON.stringify(msg) ?? '')),
          );
      },
      invalid: report,
    };
    super({
      start(c) {
        controller = c;
      },
      transform(chunk) {
        if (!(chunk instanceof Uint8Array)) throw new TypeError(`FrameDecoderStream takes Uint8Array chunks, got ${typeof chunk}`);
        core.write(chunk, sink);
      },
      flush() {
        core.end(sink);
      },
    });
  }
}

/** Messages in, Uint8Array chunks out: each message's frame. A value with no JSON form errors the stream (NOT_SERIALIZABLE). */
export class FrameEncoderStream extends TransformStream<unknown, Uint8Array> {
  constructor(options: { framing?: WebFraming } = {}) {
    decoderOf(options.framing ?? 'ndjson', DEFAULT_MAX_MESSAGE_BYTES);
    const encoder = new TextEncoder();
    super({
      transform(msg, controller) {
        controller.enqueue(encoder.encode(frame(msg)));
      },
    });
  }
}
