/*
 * mcp-frame/serve: a stdio MCP server offered over Streamable HTTP, the legacy HTTP+SSE transport and a local
 * socket.
 */
export { type ServeHandle, type ServeOptions, serve } from './serve.js';
