/*
 * mcp-frame/bridge: a remote MCP server (Streamable HTTP, legacy SSE, or a socket) offered to a stdio-only host,
 * reconnecting without loss. The opposite direction of serve; also exported from mcp-frame/serve, where it began.
 */
export { type BridgeOptions, type BridgeResult, bridge } from './bridge.js';
