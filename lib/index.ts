/*
 * mcp-frame: the framing core. Framings (ndjson, Content-Length, SSE), the streams around them, FrameError,
 * and JSON-RPC types and guards. Connections to servers are in 'mcp-frame/client'; cassettes in
 * 'mcp-frame/cassette'.
 */
export {
  FrameError,
  redact,
  redactMessage,
  preview,
  printable,
  safeLine,
  type FrameErrorCode,
  type FrameErrorPosition,
} from './errors.js';
export { frame, parseFrame, ndjson, NdjsonDecoder } from './framings/ndjson.js';
export { frameContentLength, ContentLengthDecoder, contentLengthFraming } from './framings/content-length.js';
export { frameSse, formatEvent, SseDecoder, sseFraming, type SseEventFields } from './framings/sse.js';
export { FRAMINGS, FRAMING_NAMES, framingByName, DEFAULT_MAX_DEPTH, DEFAULT_MAX_MESSAGE_BYTES, type FramingName } from './framings/index.js';
export type {
  DecodeSink,
  DecoderLimits,
  EncoderSettings,
  FramedEvent,
  FrameDecoderCore,
  FrameEncoderCore,
  Framing,
} from './framings/codec.js';
export {
  FrameDecoder,
  FrameEncoder,
  FrameConverter,
  type DecodeOptions,
  type FrameDecoderOptions,
  type FrameEncoderOptions,
  type FrameConverterOptions,
} from './streams.js';
export {
  jsonRpcProblem,
  frameProblem,
  isJsonRpcMessage,
  isRequest,
  isNotification,
  isResponse,
  isErrorResponse,
  type JsonRpcId,
  type JsonRpcRequest,
  type JsonRpcNotification,
  type JsonRpcSuccess,
  type JsonRpcErrorObject,
  type JsonRpcErrorResponse,
  type JsonRpcResponse,
  type JsonRpcMessage,
  type JsonRpcBatch,
} from './jsonrpc.js';
export { VERSION } from './version.js';
