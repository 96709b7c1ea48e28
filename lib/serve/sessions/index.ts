/*
 * The sessions room: what a client's session is (Streamable HTTP, legacy SSE, a socket connection, the modern hub
 * every 2026-07-28 request goes to), its child (the server's process, or a gateway), the table that admits and
 * counts them, and the event streams they answer on.
 */
export {
  type Children,
  commandProblem,
  gatewayChildren,
  type GatewaySettings,
  MODERN_LABEL,
  pidNote,
  type ServedChild,
  stdioChildren,
  type Watchers,
} from './children.js';
export { type Lifecycle, type ServeContext, type ServePaths, shortId } from './context.js';
export { LegacySession } from './legacy.js';
export { ModernHub } from './modern.js';
export { listenSocket, removeSocket, takeConnections } from './socket.js';
export { StartGate } from './start-gate.js';
export { StreamableSession } from './streamable.js';
export { type Admitted, type SessionTable, sessionTable, sweepIdle } from './table.js';
