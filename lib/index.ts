export { FrameError, redact, preview, type FrameErrorCode, type FrameErrorPosition } from './errors.js';
export { frame, parseFrame, ndjson, NdjsonDecoder } from './framings/ndjson.js';
export { frameContentLength, ContentLengthDecoder, contentLengthFraming, MAX_HEADER_BYTES } from './framings/content-length.js';
export { frameSse, formatEvent, SseDecoder, sseFraming, type SseEventFields } from './framings/sse.js';
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
  FRAMINGS,
  framingByName,
  DEFAULT_MAX_MESSAGE_BYTES,
  type DecodeOptions,
  type FrameDecoderOptions,
  type FrameEncoderOptions,
  type FrameConverterOptions,
  type FramingName,
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
export {
  loadConfig,
  parseConfig,
  isStdioServer,
  ConfigError,
  type McpConfig,
  type ServerConfig,
  type StdioServerConfig,
  type RemoteServerConfig,
  type LoadConfigOptions,
} from './config.js';
export {
  StdioServerProcess,
  ConnectionError,
  DEFAULT_INHERITED_ENV,
  type ConnectionErrorCode,
  type StdioOptions,
  type ExitStatus,
} from './stdio.js';
export {
  connect,
  Connection,
  RpcError,
  LATEST_PROTOCOL_VERSION,
  type ConnectOptions,
  type RequestOptions,
  type FrameTrace,
} from './connection.js';
export { VERSION } from './version.js';
export {
  Cassette,
  CassetteWriter,
  CassetteError,
  RecordingTap,
  Replayer,
  replayStream,
  parseCassette,
  exchanges,
  requestKey,
  REPLAY_NOT_RECORDED,
  type CassetteEvent,
  type EventRecorder,
  type Exchange,
  type ReplayOptions,
  type Side,
} from './cassette.js';
export { checkStream, checkCassette, formatReport, type CheckReport, type CheckProblem, type CapturePosition } from './check.js';
