/*
 * What a caller gives connect() to sign in to a server that requires the MCP authorization flow, and what the
 * flow keeps between runs.
 */
import type { KeyObject } from 'node:crypto';

/** What the user agent is asked to open, and where the authorization server will send it back. */
export interface AuthorizeRequest {
  /** The authorization URL to open. */
  url: URL;
  /** The redirect URI the authorization server sends the user agent back to. */
  redirectUri: string;
  /** Aborted when the sign-in is given up on (a timeout, the connection closed). */
  signal: AbortSignal;
}

/** What the user is to open, and the code to enter there, in the device authorization grant (RFC 8628). */
export interface DevicePrompt {
  verificationUri: string;
  /** The URL with the code in it, when the server gives one (no typing). */
  verificationUriComplete?: string;
  userCode: string;
  /** How long the code lives. */
  expiresInS: number;
}

/** A client registered in advance with the authorization server: used as given, never registered again. */
export interface PreRegisteredClient {
  clientId: string;
  clientSecret?: string;
  /** How the client proves itself at the token endpoint. @defaultValue as advertised: basic, post or none */
  authMethod?: 'client_secret_basic' | 'client_secret_post' | 'none' | 'private_key_jwt';
  /** For private_key_jwt: a PEM (PKCS#8) or a KeyObject. */
  privateKey?: string | KeyObject;
  /** For private_key_jwt. @defaultValue 'ES256' */
  signingAlg?: 'ES256' | 'RS256';
}

/** What the jwt-bearer grant (RFC 7523) needs from the flow, and gives back: the assertion to present. */
export interface JwtBearerContext {
  /** The authorization server's issuer. */
  issuer: string;
  /** The resource indicator of the server, when one is sent. */
  resource: string | undefined;
  scope: string | undefined;
  signal: AbortSignal;
  /** Marks a value the grant holds (an ID token) as a secret: it is scrubbed from every error and event of the sign-in. */
  secret?(value: string): void;
}

/** A grant that presents a JWT assertion (RFC 7523) at the token endpoint; crossAppAccess() makes one. */
export interface JwtBearerGrant {
  type: 'jwt-bearer';
  /** The assertion for this sign-in (cross-app access: an ID-JAG from the identity provider). */
  assertion(context: JwtBearerContext): Promise<string>;
}

/** What happened in a sign-in, for a log or a status line. Never carries a token or a secret. */
export type AuthEvent =
  | { type: 'discovered'; resource: string | undefined; issuer: string; legacy: boolean }
  | { type: 'registered'; clientId: string; how: 'dynamic' | 'metadata-document' }
  | { type: 'authorizing'; url: URL; redirectUri: string }
  | { type: 'authorized'; scope: string | undefined; expiresAt: number | undefined }
  | { type: 'refreshed'; expiresAt: number | undefined }
  | { type: 'failed'; code: string; message: string };

/** Tokens as kept. `expiresAt` is in ms since the epoch. */
export interface StoredTokens {
  accessToken: string;
  tokenType: string;
  refreshToken?: string;
  expiresAt?: number;
  /** The token's whole life as given (`expires_in`), in ms: it is refreshed no earlier than half way. */
  lifetimeMs?: number;
  scope?: string;
}

/** A client the flow registered (or was given), as kept. */
export interface StoredClient {
  clientId: string;
  clientSecret?: string;
  authMethod: 'client_secret_basic' | 'client_secret_post' | 'none' | 'private_key_jwt';
  redirectUri?: string;
  /** The authorization server it belongs to. */
  issuer: string;
}

/** What an AuthStore keeps for one server, keyed by its resource. */
export interface AuthRecord {
  /** The server's resource (its URL, or what its metadata names). */
  resource: string;
  /** The authorization server's issuer and token endpoint, so that a refresh needs no discovery. */
  issuer?: string;
  tokenEndpoint?: string;
  client?: StoredClient;
  tokens?: StoredTokens;
  /** For DPoP-bound tokens (`tokenType: 'DPoP'`): the private JWK of the key pair they are bound to. A secret. */
  dpopKey?: import('node:crypto').JsonWebKey;
  /** When the record was last written, ms since the epoch. */
  updatedAt?: number;
}

/**
 * Where tokens and registrations are kept, keyed by resource. `lock` (optional) makes one sign-in or refresh at
 * a time across processes that share the store: it resolves with the function that releases the lock.
 */
export interface AuthStore {
  get(key: string): Promise<AuthRecord | undefined>;
  set(key: string, record: AuthRecord): Promise<void>;
  delete(key: string): Promise<void>;
  lock?(key: string): Promise<() => Promise<void>>;
}

export interface AuthOptions {
  /** Drives the user agent: resolves with the URL the authorization server redirected to (code, state, iss). */
  authorize?: (req: AuthorizeRequest) => Promise<URL | string>;
  /** Needed with your own authorize(); loopbackAuthorizer() brings its own. */
  redirectUri?: string;
  /** A pre-registered client. */
  client?: PreRegisteredClient;
  /** A client ID metadata document, used when the authorization server supports it. */
  clientMetadataUrl?: string;
  /** @defaultValue 'mcp-frame' */
  clientName?: string;
  /** @defaultValue 'authorization_code' */
  grant?: 'authorization_code' | 'client_credentials' | JwtBearerGrant;
  /** Pins the scope; otherwise the challenge's, else all of the resource's scopes_supported, else none. */
  scope?: string;
  /** @defaultValue asked for when the authorization server lists offline_access */
  offlineAccess?: boolean;
  /** Override or omit (`false`) the RFC 8707 resource indicator. */
  resource?: string | false;
  /** Extra authorization request parameters (audience, login_hint, ...); the flow's own keys are refused. */
  authorizeParams?: Record<string, string>;
  /**
   * Sign in with the device authorization grant (RFC 8628) instead of a browser redirect: no port bound, the
   * URL and code shown by `prompt` to open on any device. `when: 'offered'` takes it when the authorization
   * server lists a device_authorization_endpoint (else the browser flow); `'always'` fails a sign-in where it is not.
   */
  device?: { when: 'offered' | 'always'; prompt(p: DevicePrompt): void };
  /** How long authorize() (or the device flow) may take before the sign-in fails with AUTH_TIMEOUT. @defaultValue 300000 (5 minutes) */
  authorizeTimeoutMs?: number;
  /**
   * DPoP-bound tokens (RFC 9449, SEP-1932): a key pair per authorization server, a proof signed with it on every
   * token request and every request to the server, the server's nonces honoured. `true`: whenever the
   * authorization server lists ES256 in dpop_signing_alg_values_supported; `false`: never. By default, when the
   * server asks for them (its challenge is `DPoP` only, or its protected resource metadata says
   * dpop_bound_access_tokens_required); then an authorization server that cannot bind them is AUTH_REQUIRED.
   */
  dpop?: boolean;
  /** @defaultValue memoryAuthStore() */
  store?: AuthStore;
  onEvent?: (e: AuthEvent) => void;
}
