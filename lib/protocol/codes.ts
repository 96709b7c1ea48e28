/*
 * The JSON-RPC error codes mcp-frame sends and reads, each declared once: JSON-RPC 2.0's own, MCP's, the
 * 2026-07-28 revision's, and the project's in the server range (-32000 to -32099), each naming one situation.
 */

export const CODES = {
  /** The bytes are not JSON (JSON-RPC 2.0). */
  parseError: -32700,
  /** Not a JSON-RPC request (JSON-RPC 2.0). */
  invalidRequest: -32600,
  /** No such method (JSON-RPC 2.0): in the modern era also HTTP 404. */
  methodNotFound: -32601,
  /** The params are wrong: an unknown tool, a cursor not given, a malformed envelope (JSON-RPC 2.0). */
  invalidParams: -32602,
  /** The receiver failed (JSON-RPC 2.0). */
  internalError: -32603,
  /**
   * A server behind mcp-frame could not take or answer the request (a child gone, an upstream down or at its
   * limit, a stream lost, a caller nobody can tell): the server range's first code, with a message that says which.
   */
  serverError: -32000,
  /** A cassette has no recording of this request (`mcp-frame replay`). */
  replayNotRecorded: -32001,
  /** MCP's "resource not found". */
  resourceNotFound: -32002,
  /** 2026-07-28: the request's headers do not match its body. */
  headerMismatch: -32020,
  /** 2026-07-28: the server needs a client capability the request did not declare. */
  missingRequiredClientCapability: -32021,
  /** 2026-07-28: a protocol revision the receiver does not speak (data: supported, requested). */
  unsupportedProtocolVersion: -32022,
} as const;
