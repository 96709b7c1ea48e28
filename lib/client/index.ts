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
  type RemoteAuthConfig,
  type SocketServerConfig,
  type LoadConfigOptions,
} from './config.js';
export { ConnectionError, type AuthChallenge, type ConnectionErrorCode, type ExitStatus } from './errors.js';
export {
  crossAppAccess,
  loopbackAuthorizer,
  type CrossAppAccessOptions,
  type LoopbackAuthorizer,
  type LoopbackAuthorizerOptions,
} from './auth/agents.js';
export { defaultAuthDir, fileAuthStore, memoryAuthStore, type FileAuthStore, type FileAuthStoreOptions } from './auth/store.js';
export { parseChallenges } from './auth/wire.js';
export type {
  AuthEvent,
  AuthOptions,
  AuthorizeRequest,
  AuthRecord,
  AuthStore,
  DevicePrompt,
  JwtBearerContext,
  JwtBearerGrant,
  PreRegisteredClient,
  StoredClient,
  StoredTokens,
} from './auth/types.js';
export { StreamChannel, type Channel, type Direction, type StreamChannelOptions } from './channel.js';
export { StdioChannel, DEFAULT_INHERITED_ENV, type StdioOptions } from './stdio.js';
export { HttpChannel, type HttpChannelOptions, type ReconnectOptions } from './http.js';
export { SseChannel } from './sse.js';
export { ToolPolicy } from './tool-policy.js';
export { MODERN_PROTOCOL_VERSIONS, type ProtocolEra } from '../protocol/modern.js';
export { connect } from './connect.js';
export {
  connectOver,
  Connection,
  defaultEraCache,
  EraCache,
  RpcError,
  LATEST_LEGACY_PROTOCOL_VERSION,
  LATEST_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  SUPPORTED_PROTOCOL_VERSIONS,
  type ConnectOptions,
  type ListenFilter,
  type Progress,
  type RequestOptions,
  type Subscription,
  MAX_INPUT_ROUNDS,
  type FrameTrace,
} from './connection.js';
