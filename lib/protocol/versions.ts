/*
 * The MCP revisions of the initialize era (the "legacy" era, 2024-11-05 to 2025-11-25). The modern revisions,
 * which have no handshake, are in modern.ts (MODERN_PROTOCOL_VERSIONS).
 */

/** The revision asked for in `initialize` by default: the newest revision with the initialize handshake. */
export const LATEST_LEGACY_PROTOCOL_VERSION = '2025-11-25';

/** The handshake revisions this client speaks; a server may answer any of them to a request for the latest. */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

/** @deprecated The name says less than it is: LATEST_LEGACY_PROTOCOL_VERSION, the newest initialize-era revision. */
export const LATEST_PROTOCOL_VERSION = LATEST_LEGACY_PROTOCOL_VERSION;

/** @deprecated Legacy revisions only: LEGACY_PROTOCOL_VERSIONS (the modern ones are MODERN_PROTOCOL_VERSIONS). */
export const SUPPORTED_PROTOCOL_VERSIONS = LEGACY_PROTOCOL_VERSIONS;
