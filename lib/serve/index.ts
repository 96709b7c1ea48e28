/*
 * mcp-frame/serve: a stdio MCP server offered over Streamable HTTP, the legacy HTTP+SSE transport and a local
 * socket (serve), and a remote server offered to a stdio-only host (bridge).
 */
export { type BridgeOptions, type BridgeResult, bridge } from './bridge.js';
export { type ServeHandle, type ServeOptions, serve } from './serve.js';
