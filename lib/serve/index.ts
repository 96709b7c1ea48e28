/*
 * mcp-frame/serve: a stdio MCP server offered over Streamable HTTP, the legacy HTTP+SSE transport and a local
 * socket (serve), several servers as one (serve given named entries, or a Gateway of one's own), and a remote
 * server offered to a stdio-only host (bridge).
 */
export { type BridgeOptions, type BridgeResult, bridge } from '../bridge/index.js';
export {
  type ServeAuthOptions,
  type ServeConfig,
  type ServeHandle,
  type ServeOptions,
  type ServerChanges,
  type ServeTarget,
  type ServeTls,
  serve,
} from './serve.js';
export type { ServePaths } from './sessions/index.js';
export { createLogger, type LogFields, type Logger, type LoggerOptions, type LogLevel } from '../log.js';
export { CALLER_META, Gateway, type GatewayObserver, type GatewayOptions } from '../gateway/gateway.js';
export type { Caller } from '../protocol/caller.js';
export { type Decision, Policy, PolicyError, type PolicyRule } from '../gateway/policy.js';
export type { PrefixMode } from '../gateway/names.js';
export { UpstreamHealth, type UpstreamOpener, type UpstreamOpenOptions, type UpstreamState } from '../gateway/upstream.js';
export type { MetricsRegistry } from './observe/index.js';
