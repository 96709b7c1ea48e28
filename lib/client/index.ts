/*
 * mcp-frame/client: config files, connect(), Connection, and the channels that carry a connection.
 */
export {
  loadConfig,
  parseConfig,
  checkConfig,
  findConfig,
  isStdioServer,
  ConfigError,
  type McpConfig,
  type ServerConfig,
  type StdioServerConfig,
  type RemoteServerConfig,
  type SocketServerConfig,
  type LoadConfigOptions,
} from './config.js';
export { ConnectionError, type AuthChallenge, type ConnectionErrorCode, type ExitStatus } from './errors.js';
export * from './auth/index.js';
export { StreamChannel, type Channel, type Direction, type StreamChannelOptions } from './channel.js';
export { StdioChannel, DEFAULT_INHERITED_ENV, type StdioOptions } from './stdio.js';
export { HttpChannel, type HttpChannelOptions, type ReconnectOptions } from './http.js';
export { SseChannel } from './sse.js';
export { MODERN_PROTOCOL_VERSIONS, type ProtocolEra } from './modern.js';
export {
  connect,
  connectOver,
  Connection,
  RpcError,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  type ConnectOptions,
  type RequestOptions,
  type FrameTrace,
} from './connection.js';
