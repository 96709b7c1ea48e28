export { FrameError, redact, preview, type FrameErrorCode, type FrameErrorPosition } from './errors.js';
export { frame, parseFrame, ndjson, NdjsonDecoder } from './framings/ndjson.js';
export type { DecodeSink, DecoderLimits, FrameDecoderCore, FrameEncoderCore, Framing } from './framings/codec.js';
export {
  FrameDecoder,
  FrameEncoder,
  DEFAULT_MAX_MESSAGE_BYTES,
  type FrameDecoderOptions,
  type FrameEncoderOptions,
  type FramingName,
} from './streams.js';
