/*
 * The MCP authorization flow (MCP 2025-11-25 and 2026-07-28 "Authorization", OAuth 2.1) for one server:
 * discovery (RFC 9728, RFC 8414, OpenID configuration, the 2025-03-26 fallbacks), who the client is (given,
 * a client ID metadata document, or RFC 7591 registration), the authorization code grant with PKCE S256 and
 * RFC 8707 resource indicators, client credentials and jwt-bearer grants, and staying signed in: refresh before
 * expiry and on a 401, rotated refresh tokens saved before use, one sign-in or refresh at a time per server.
 */
import { preview } from '../../errors.js';
import { type AuthChallenge, ConnectionError } from '../errors.js';
import { memoryAuthStore } from './store.js';
import { type DpopKey, DpopNonces, dpopKeyFor } from './dpop.js';
import type { AuthEvent, AuthOptions, AuthRecord, AuthStore, StoredClient, StoredTokens } from './types.js';
import { type AuthHttpAnswer, oauthErrorText, pkcePair, randomState } from './wire.js';
import { MIN_SECRET_LENGTH, replaceSecrets } from '../../redaction.js';
import { type Discovery, discover } from './discovery.js';
import { clientOf, registerClient } from './registration.js';
import { dpopKeyOf, refreshRefused, scopeFor, tokenRequest, tokensFrom } from './tokens.js';
import {
  authorizationUrl,
  authorizeWithin,
  codeOf,
  type DeviceAuthorization,
  deviceAuthorization,
  deviceFlowOffered,
  pollDeviceToken,
  resourceHint,
} from './grants.js';
import { applicationType, canonicalResource, resourceAllowed, secureEndpoint, str, stringList } from './resource.js';

export { applicationType, canonicalResource, resourceAllowed };

/** Tokens are refreshed this long before they expire. */
const REFRESH_EARLY_MS = 60_000;

/**
 * How long before its expiry a token is refreshed: REFRESH_EARLY_MS, but at most half its life (a 4 s token
 * refreshed 60 s early would be refreshed before every request, spending a rotated refresh token each time).
 */
function refreshEarlyMs(tokens: StoredTokens): number {
  return tokens.lifetimeMs === undefined ? REFRESH_EARLY_MS : Math.min(REFRESH_EARLY_MS, tokens.lifetimeMs / 2);
}
/** At most this many sign-ins per server in a minute; then AUTH_SCOPE_LOOP. */
const MAX_SIGN_INS_PER_MINUTE = 6;
/** How long authorize() may take (a user in a browser) unless the authorizer bounds it itself. */
const AUTHORIZE_TIMEOUT_MS = 5 * 60_000;

/** Keys of the authorization request that the flow sets itself: authorizeParams may not carry them. */
export const FLOW_PARAMS: ReadonlySet<string> = new Set([
  'response_type',
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
  'resource',
]);

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** The redirect URI getter a loopbackAuthorizer() carries, and how to stop its callback server. */
interface WithRedirect {
  redirectUri?: () => Promise<string>;
  close?: () => Promise<void>;
}

/** A function of an authorizer, or an options object's, checked once. */
function authorizeParamsOf(options: AuthOptions): Record<string, string> {
  const params = options.authorizeParams ?? {};
  for (const key of Object.keys(params)) {
    if (FLOW_PARAMS.has(key)) throw new TypeError(`auth.authorizeParams may not set "${key}": the authorization flow sets it`);
  }
  return params;
}

/** The Authorization header value for `tokens`: the DPoP scheme for a DPoP-bound token (RFC 9449 §7.1), else Bearer. */
function authorization(tokens: StoredTokens | undefined): string | undefined {
  if (tokens === undefined) return undefined;
  return `${tokens.tokenType === 'DPoP' ? 'DPoP' : 'Bearer'} ${tokens.accessToken}`;
}

/**
 * One server's sign-in state, shared by every request of its channel. `header()` gives the Authorization value
 * to send; `refused()` handles a 401 or a 403 insufficient_scope and resolves when the request may be sent again.
 */
export class AuthSession {
  readonly #server: URL;
  readonly #key: string;
  readonly #options: AuthOptions;
  readonly #store: AuthStore;
  readonly #params: Record<string, string>;
  #record: AuthRecord | undefined;
  #loaded = false;
  /** The one sign-in or refresh under way; everything else waits for it. */
  #busy: Promise<void> | undefined;
  readonly #signIns: number[] = [];
  /** The scopes asked for so far, for a step-up's union. */
  #scopes = new Set<string>();
  /** Secrets this session has held, to scrub from anything a server echoes. */
  readonly #secrets = new Set<string>();
  #closed = new AbortController();
  #signingIn = false;
  #waitedMs = 0;
  /** The server asked for DPoP-bound tokens (a DPoP-only challenge, or its metadata). */
  #dpopAsked = false;
  /** Nonces of the authorization server (RFC 9449 §8) and of the resource server (§9), apart: they may share an origin. */
  readonly #asNonces = new DpopNonces();
  readonly #rsNonces = new DpopNonces();

  constructor(server: URL, options: AuthOptions) {
    this.#server = server;
    this.#key = canonicalResource(server);
    this.#options = options;
    this.#store = options.store ?? memoryAuthStore();
    this.#params = authorizeParamsOf(options);
    if (options.client?.clientSecret !== undefined) this.#remember(options.client.clientSecret);
    if (options.scope !== undefined) for (const s of options.scope.split(' ')) if (s !== '') this.#scopes.add(s);
  }

  /** Whether a user agent sign-in is under way (request timeouts wait for it). */
  get signingIn(): boolean {
    return this.#signingIn;
  }

  /** How long authorize() has taken in all (ms): time a handshake's deadline does not count. */
  get waitedMs(): number {
    return this.#waitedMs;
  }

  /** `text` with every token and secret of this session replaced by [REDACTED]. */
  scrub(text: string): string {
    return replaceSecrets(text, this.#secrets);
  }

  /** Stops any sign-in under way (its authorize() sees the abort). */
  close(): void {
    this.#closed.abort(new ConnectionError('CLOSED', 'the connection closed during the sign-in'));
  }

  /** The Authorization header value for the next request, refreshing first when the token is about to expire. */
  async header(): Promise<string | undefined> {
    if (this.#busy !== undefined) await this.#busy.catch(() => undefined);
    if (!this.#loaded) {
      this.#loaded = true;
      this.#use(await this.#store.get(this.#key));
    }
    const tokens = this.#record?.tokens;
    if (tokens === undefined) return undefined;
    if (tokens.refreshToken !== undefined && tokens.expiresAt !== undefined && tokens.expiresAt - refreshEarlyMs(tokens) <= Date.now()) {
      // A refresh that fails here is not the request's failure: the 401 that follows signs in.
      await this.#exclusive(async () => {
        const fresh = await this.#reread();
        // Refreshed (or signed out) meanwhile, by another request or another process sharing the store.
        if (fresh?.tokens?.refreshToken === undefined || fresh.tokens.accessToken !== tokens.accessToken) return;
        await this.#refresh(fresh);
      }).catch(() => undefined);
    }
    return authorization(this.#record?.tokens);
  }

  /**
   * The DPoP header for a request to the server (`method`, `url`), when the token is DPoP-bound: a fresh proof
   * with the token's hash and the server's latest nonce. Undefined for a bearer token.
   */
  proof(method: string, url: URL): string | undefined {
    const record = this.#record;
    if (record?.tokens?.tokenType !== 'DPoP' || record.issuer === undefined) return undefined;
    return dpopKeyFor(record.issuer, record.dpopKey).proof(method, url, record.tokens.accessToken, this.#rsNonces.get(url));
  }

  /** Keeps a DPoP-Nonce a response of the server gave; true when it gave one. */
  noteNonce(url: URL, header: string | string[] | undefined): boolean {
    return this.#rsNonces.note(url, header);
  }

  /**
   * The server refused a request sent with `sent` (undefined: none): 401 (the token is missing, expired or
   * revoked) or 403 insufficient_scope. Resolves once a new token is there.
   */
  async refused(status: number, challenge: AuthChallenge | undefined, sent: string | undefined): Promise<void> {
    const stepUp = status === 403;
    if (challenge?.scheme.toLowerCase() === 'dpop') this.#dpopAsked = true;
    await this.#exclusive(async () => {
      const fresh = await this.#reread();
      const current = authorization(fresh?.tokens);
      // Another request, or another process sharing the store, signed in meanwhile: use its token.
      if (!stepUp && current !== undefined && current !== sent) return;
      if (!stepUp && fresh?.tokens?.refreshToken !== undefined) {
        try {
          await this.#refresh(fresh);
          return;
        } catch (err) {
          if (!(err instanceof ConnectionError && err.code === 'AUTH_TOKEN')) throw err;
          // invalid_grant (revoked, spent) and the like: the tokens are dropped, and a sign-in follows.
        }
      }
      await this.#signIn(challenge, stepUp);
    });
  }

  /** Runs `task` when no other sign-in or refresh of this session is under way, and under the store's lock. */
  #exclusive(task: () => Promise<void>): Promise<void> {
    const run = async (): Promise<void> => {
      const release = await this.#store.lock?.(this.#key);
      try {
        await task();
      } finally {
        await release?.();
      }
    };
    const previous = this.#busy ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(run);
    const tracked = next.finally(() => {
      if (this.#busy === tracked) this.#busy = undefined;
    });
    this.#busy = tracked;
    tracked.catch(() => undefined);
    return next;
  }

  async #reread(): Promise<AuthRecord | undefined> {
    const record = await this.#store.get(this.#key);
    this.#use(record);
    return record;
  }

  #use(record: AuthRecord | undefined): void {
    this.#record = record;
    if (record?.tokens !== undefined) {
      this.#remember(record.tokens.accessToken);
      if (record.tokens.refreshToken !== undefined) this.#remember(record.tokens.refreshToken);
      for (const s of record.tokens.scope?.split(' ') ?? []) if (s !== '') this.#scopes.add(s);
    }
    if (record?.client?.clientSecret !== undefined) this.#remember(record.client.clientSecret);
    if (typeof record?.dpopKey?.d === 'string') this.#remember(record.dpopKey.d);
  }

  #remember(secret: string): void {
    if (secret.length < MIN_SECRET_LENGTH) return;
    this.#secrets.add(secret);
    // A long-lived session refreshes for days: the oldest secrets go first.
    if (this.#secrets.size > 64) this.#secrets.delete(this.#secrets.values().next().value!);
  }

  async #save(record: AuthRecord): Promise<void> {
    record.updatedAt = Date.now();
    this.#use(record);
    await this.#store.set(this.#key, record);
  }

  #event(e: AuthEvent): void {
    try {
      this.#options.onEvent?.(e);
    } catch {
      // A listener's bug is not the sign-in's failure.
    }
  }

  /** The error to throw, its text without any token or secret of this session (a server may echo one), and said. */
  #fail(error: ConnectionError): ConnectionError {
    const message = this.scrub(error.message);
    const scrubbed =
      message === error.message
        ? error
        : new ConnectionError(error.code, message, {
            status: error.status,
            challenge: error.challenge,
            ...(error.cause === undefined ? {} : { cause: error.cause }),
          });
    this.#event({ type: 'failed', code: scrubbed.code, message: scrubbed.message });
    return scrubbed;
  }

  /** A refresh_token grant; the rotated refresh token is saved before anything else can use it. */
  async #refresh(record: AuthRecord): Promise<void> {
    const tokens = record.tokens!;
    const client = this.#clientFor(record);
    if (record.tokenEndpoint === undefined || client === undefined) {
      const next: AuthRecord = { ...record };
      delete next.tokens;
      await this.#save(next);
      throw this.#fail(new ConnectionError('AUTH_TOKEN', 'the stored tokens cannot be refreshed: no token endpoint or client is recorded'));
    }
    const body: Record<string, string> = { grant_type: 'refresh_token', refresh_token: tokens.refreshToken! };
    const resource = this.#resourceParam(record.resource);
    if (resource !== undefined) body.resource = resource;
    // A DPoP-bound refresh token is bound to the same key (RFC 9449 §5): the refresh is proven with it.
    const key = tokens.tokenType === 'DPoP' && record.issuer !== undefined ? dpopKeyFor(record.issuer, record.dpopKey) : undefined;
    const answer = await this.#tokenRequest(record.tokenEndpoint, client, body, record.issuer ?? record.tokenEndpoint, key);
    if (answer.status !== 200 || answer.json === undefined) {
      const refused = refreshRefused(answer, (text) => this.scrub(text));
      if (refused.code === 'AUTH_TOKEN') {
        // The refresh token is spent or revoked: drop the tokens; a client the server forgot is dropped too.
        const next: AuthRecord = { ...record };
        delete next.tokens;
        if (answer.json?.error === 'invalid_client' && this.#options.client === undefined) delete next.client;
        await this.#save(next);
      }
      throw this.#fail(refused);
    }
    const fresh = this.#tokensFrom(answer, tokens.scope, tokens.refreshToken, key);
    await this.#save({ ...record, tokens: fresh });
    this.#event({ type: 'refreshed', expiresAt: fresh.expiresAt });
  }

  #clientFor(record: AuthRecord): StoredClient | undefined {
    return clientOf(this.#options.client, record);
  }

  #resourceParam(discovered: string | undefined): string | undefined {
    if (this.#options.resource === false) return undefined;
    return this.#options.resource ?? discovered;
  }

  /** A full sign-in: discovery, the client, the grant, the tokens saved. */
  async #signIn(challenge: AuthChallenge | undefined, stepUp: boolean): Promise<void> {
    const now = Date.now();
    while (this.#signIns.length > 0 && this.#signIns[0]! < now - 60_000) this.#signIns.shift();
    if (this.#signIns.length >= MAX_SIGN_INS_PER_MINUTE) {
      throw this.#fail(
        new ConnectionError('AUTH_SCOPE_LOOP', `${MAX_SIGN_INS_PER_MINUTE} sign-ins to "${this.#server.host}" in a minute; not signing in again`),
      );
    }
    this.#signIns.push(now);
    const signal = this.#closed.signal;
    const found = await discover(this.#server, challenge, signal).catch((err: unknown) => {
      throw err instanceof ConnectionError ? this.#fail(err) : err;
    });
    if (found.dpopRequired) this.#dpopAsked = true;
    this.#event({ type: 'discovered', resource: found.resource, issuer: found.issuer, legacy: found.legacy });
    const record: AuthRecord = { ...(this.#record ?? { resource: found.resource ?? this.#key }) };
    record.resource = found.resource ?? this.#key;
    record.issuer = found.issuer;
    record.tokenEndpoint = found.tokenEndpoint;
    if (record.client !== undefined && record.client.issuer !== found.issuer) delete record.client;
    const scope = this.#scopeFor(challenge, found, stepUp);
    const grant = this.#options.grant ?? 'authorization_code';
    let tokens: StoredTokens;
    if (grant === 'client_credentials') {
      const client = this.#clientFor(record);
      if (client === undefined) throw this.#fail(new ConnectionError('AUTH_REQUIRED', 'the client_credentials grant needs auth.client'));
      const body: Record<string, string> = { grant_type: 'client_credentials' };
      if (scope !== undefined) body.scope = scope;
      const resource = this.#resourceParam(found.resource);
      if (resource !== undefined) body.resource = resource;
      tokens = await this.#grant(found, client, body, scope);
    } else if (typeof grant === 'object') {
      const client = this.#clientFor(record);
      if (client === undefined) throw this.#fail(new ConnectionError('AUTH_REQUIRED', 'the jwt-bearer grant needs auth.client'));
      const resource = this.#resourceParam(found.resource);
      let assertion: string;
      try {
        assertion = await grant.assertion({ issuer: found.issuer, resource, scope, signal, secret: (value) => this.#remember(value) });
      } catch (err) {
        // What the grant held (an ID token it marked) may be in its error: scrubbed like the session's own.
        throw err instanceof ConnectionError ? this.#fail(err) : err;
      }
      // The assertion is a bearer credential at the token endpoint: never in an error or a log.
      this.#remember(assertion);
      const body: Record<string, string> = { grant_type: JWT_BEARER, assertion };
      if (scope !== undefined) body.scope = scope;
      if (resource !== undefined) body.resource = resource;
      tokens = await this.#grant(found, client, body, scope);
    } else if (this.#deviceFlow(found)) {
      tokens = await this.#deviceCode(found, record, scope, signal);
    } else {
      tokens = await this.#authorizationCode(found, record, scope, signal);
    }
    if (tokens.tokenType === 'DPoP') record.dpopKey = dpopKeyFor(found.issuer, record.dpopKey).toJwk();
    else delete record.dpopKey;
    await this.#save({ ...record, tokens });
    this.#event({ type: 'authorized', scope: tokens.scope, expiresAt: tokens.expiresAt });
  }

  /** The scope to ask for: pinned; else the challenge's (a step-up adds what was held); else the resource's; else none. */
  #scopeFor(challenge: AuthChallenge | undefined, found: Discovery, stepUp: boolean): string | undefined {
    const asked = scopeFor(this.#options, challenge, found, stepUp ? this.#scopes : undefined);
    for (const scope of asked?.split(' ') ?? []) this.#scopes.add(scope);
    return asked;
  }

  async #authorizationCode(found: Discovery, record: AuthRecord, scope: string | undefined, signal: AbortSignal): Promise<StoredTokens> {
    const authorize = this.#options.authorize;
    if (authorize === undefined) {
      throw this.#fail(
        new ConnectionError(
          'AUTH_REQUIRED',
          `"${this.#server.host}" needs a sign-in in a browser: give auth.authorize (loopbackAuthorizer() opens one)`,
        ),
      );
    }
    if (found.metadata !== undefined && !stringList(found.metadata.code_challenge_methods_supported)?.includes('S256')) {
      throw this.#fail(
        new ConnectionError(
          'AUTH_DENIED',
          `the authorization server ${found.issuer} does not list PKCE S256 (code_challenge_methods_supported); not signing in without it`,
        ),
      );
    }
    const redirectUri = this.#options.redirectUri ?? (await (authorize as WithRedirect).redirectUri?.());
    if (redirectUri === undefined) throw new TypeError('auth.redirectUri is needed with an authorize() of your own');
    let client = this.#clientFor(record);
    // A client registered for another redirect, or for the device grant (none), is registered again for this one.
    if (client !== undefined && this.#options.client === undefined && client.redirectUri !== redirectUri) {
      client = undefined;
    }
    try {
      client ??= await this.#register(found, redirectUri, signal);
    } catch (err) {
      // The callback server listens from redirectUri() on; a sign-in that ends before authorize() stops it here.
      await (authorize as WithRedirect).close?.();
      throw err;
    }
    if (this.#options.client === undefined) record.client = client;
    else delete record.client;
    const pkce = pkcePair();
    const state = randomState();
    const resource = this.#resourceParam(found.resource);
    const url = authorizationUrl(found, {
      clientId: client.clientId,
      redirectUri,
      challenge: pkce.challenge,
      state,
      scope,
      resource,
      extra: this.#params,
    });
    this.#event({ type: 'authorizing', url, redirectUri });
    const returned = await this.#userAgent(authorize, url, redirectUri, signal);
    let code: string;
    try {
      code = codeOf(returned, state, found, resource);
    } catch (err) {
      throw err instanceof ConnectionError ? this.#fail(err) : err;
    }
    const body: Record<string, string> = { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: pkce.verifier };
    if (resource !== undefined) body.resource = resource;
    return this.#grant(found, client, body, scope);
  }

  /** Whether this sign-in takes the device grant: asked for, and offered (or asked for always: refused when not offered). */
  #deviceFlow(found: Discovery): boolean {
    try {
      return deviceFlowOffered(found, this.#options.device);
    } catch (err) {
      throw err instanceof ConnectionError ? this.#fail(err) : err;
    }
  }

  /**
   * The device authorization grant (RFC 8628): the code asked for, the URL and user code shown through
   * `device.prompt`, the token endpoint polled at the server's interval (5 s more on each slow_down), within
   * the code's life and authorizeTimeoutMs. No port is bound and no browser is opened.
   */
  async #deviceCode(found: Discovery, record: AuthRecord, scope: string | undefined, signal: AbortSignal): Promise<StoredTokens> {
    const endpoint = str(found.metadata?.device_authorization_endpoint)!;
    if (!/^https?:\/\//.test(endpoint) || !secureEndpoint(endpoint))
      throw this.#fail(
        new ConnectionError(
          'AUTH_REQUIRED',
          `the device_authorization_endpoint ${preview(endpoint)} must be https (plain http only on this machine)`,
        ),
      );
    let client = this.#clientFor(record);
    // One registered for the browser flow has no device grant: a client of its own for this one.
    if (client !== undefined && this.#options.client === undefined && client.redirectUri !== undefined) client = undefined;
    client ??= await this.#register(found, undefined, signal);
    if (this.#options.client === undefined) record.client = client;
    const body: Record<string, string> = {};
    if (scope !== undefined) body.scope = scope;
    const resource = this.#resourceParam(found.resource);
    if (resource !== undefined) body.resource = resource;
    const asked = await this.#tokenRequest(endpoint, client, body, found.issuer);
    let device: DeviceAuthorization;
    try {
      device = deviceAuthorization(asked, resource, (t) => this.scrub(t));
    } catch (err) {
      throw err instanceof ConnectionError ? this.#fail(err) : err;
    }
    // The device code is a bearer credential at the token endpoint until it is spent.
    this.#remember(device.deviceCode);
    this.#options.device!.prompt(device.prompt);
    const limit = Math.min(device.prompt.expiresInS * 1000, this.#options.authorizeTimeoutMs ?? AUTHORIZE_TIMEOUT_MS);
    const key = this.#dpopKey(found);
    return this.#userWait(async () => {
      const poll = (body: Record<string, string>): Promise<AuthHttpAnswer> =>
        this.#tokenRequest(found.tokenEndpoint, client, body, found.issuer, key);
      const answer = await pollDeviceToken(poll, { device, resource, limitMs: limit, signal, scrub: (t) => this.scrub(t) });
      return this.#tokensFrom(answer, scope, undefined, key);
    });
  }

  /**
   * Waits for the user (a browser sign-in, a device code entered): the time spent is kept apart from the
   * request's, and an error that is no ConnectionError fails the sign-in as AUTH_DENIED.
   */
  async #userWait<T>(task: () => Promise<T>): Promise<T> {
    this.#signingIn = true;
    const started = Date.now();
    try {
      return await task();
    } catch (err) {
      throw this.#fail(
        err instanceof ConnectionError ? err : new ConnectionError('AUTH_DENIED', `the sign-in failed: ${(err as Error).message}`, { cause: err }),
      );
    } finally {
      this.#signingIn = false;
      this.#waitedMs += Date.now() - started;
    }
  }

  /** authorize() within its time limit and the session's life; its answer as a URL. */
  async #userAgent(authorize: NonNullable<AuthOptions['authorize']>, url: URL, redirectUri: string, closed: AbortSignal): Promise<URL> {
    const limit = this.#options.authorizeTimeoutMs ?? AUTHORIZE_TIMEOUT_MS;
    const answer = await this.#userWait(() => authorizeWithin(authorize, url, redirectUri, closed, limit));
    try {
      return new URL(answer);
    } catch {
      throw this.#fail(new ConnectionError('AUTH_DENIED', `authorize() gave no URL: ${preview(String(answer))}`));
    }
  }

  /** A token request; an answer without a usable token is AUTH_TOKEN. */
  async #grant(found: Discovery, client: StoredClient, body: Record<string, string>, scope: string | undefined): Promise<StoredTokens> {
    const key = this.#dpopKey(found);
    const answer = await this.#tokenRequest(found.tokenEndpoint, client, body, found.issuer, key);
    if (answer.status !== 200 || answer.json === undefined) {
      const hint = resourceHint(body.resource, str(answer.json?.error), str(answer.json?.error_description));
      throw this.#fail(new ConnectionError('AUTH_TOKEN', `the token endpoint refused: ${oauthErrorText(answer, (text) => this.scrub(text))}${hint}`));
    }
    return this.#tokensFrom(answer, scope, undefined, key);
  }

  /** The key pair to bind this grant's tokens to (see AuthOptions.dpop), or undefined for bearer tokens. */
  #dpopKey(found: Discovery): DpopKey | undefined {
    const option = this.#options.dpop;
    if (option === false || (option !== true && !this.#dpopAsked)) return undefined;
    try {
      return dpopKeyOf(found, this.#dpopAsked, this.#server, this.#record?.dpopKey);
    } catch (err) {
      throw err instanceof ConnectionError ? this.#fail(err) : err;
    }
  }

  /** The tokens of a token endpoint's answer (see tokensFrom), each a secret of this session's from now on. */
  #tokensFrom(answer: AuthHttpAnswer, scope: string | undefined, previousRefresh: string | undefined, key?: DpopKey): StoredTokens {
    let tokens: StoredTokens;
    try {
      tokens = tokensFrom(answer, scope, previousRefresh, key);
    } catch (err) {
      throw err instanceof ConnectionError ? this.#fail(err) : err;
    }
    this.#remember(tokens.accessToken);
    if (tokens.refreshToken !== undefined) this.#remember(tokens.refreshToken);
    return tokens;
  }

  /** A POST to the token endpoint (see tokenRequest), with this session's nonces, client key and secrets. */
  #tokenRequest(endpoint: string, client: StoredClient, body: Record<string, string>, issuer: string, key?: DpopKey): Promise<AuthHttpAnswer> {
    return tokenRequest(endpoint, client, body, {
      issuer,
      key,
      nonces: this.#asNonces,
      given: this.#options.client,
      signal: this.#closed.signal,
      remember: (secret) => this.#remember(secret),
    });
  }

  /** Who the client is (see registerClient): remembered as a secret where it has one, and said. */
  async #register(found: Discovery, redirectUri: string | undefined, signal: AbortSignal): Promise<StoredClient> {
    const options = {
      server: this.#server,
      clientMetadataUrl: this.#options.clientMetadataUrl,
      clientName: this.#options.clientName,
      scrub: (text: string) => this.scrub(text),
    };
    const { client, how } = await registerClient(found, redirectUri, options, signal).catch((err: unknown) => {
      throw err instanceof ConnectionError ? this.#fail(err) : err;
    });
    if (client.clientSecret !== undefined) this.#remember(client.clientSecret);
    this.#event({ type: 'registered', clientId: client.clientId, how });
    return client;
  }
}
