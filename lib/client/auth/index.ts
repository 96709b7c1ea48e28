/*
 * The MCP authorization flow for remote servers: connect(..., { auth }) uses it; these are its parts.
 */
export { crossAppAccess, loopbackAuthorizer, type CrossAppAccessOptions, type LoopbackAuthorizer, type LoopbackAuthorizerOptions } from './agents.js';
export { defaultAuthDir, fileAuthStore, memoryAuthStore, type FileAuthStore, type FileAuthStoreOptions } from './store.js';
export { parseChallenges } from './wire.js';
export type {
  AuthEvent,
  AuthOptions,
  AuthorizeRequest,
  AuthRecord,
  AuthStore,
  JwtBearerContext,
  JwtBearerGrant,
  PreRegisteredClient,
  StoredClient,
  StoredTokens,
} from './types.js';
