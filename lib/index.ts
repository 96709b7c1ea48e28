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
