/*
 * mcp-frame/sdk: transports for the MCP SDK's Client, built on this package's channels. The SDK is an
 * optional peer dependency of this entry point only; nothing here imports it.
 */
export { StdioTransport } from './stdio.js';
