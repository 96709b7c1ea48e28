/*
 * The token endpoint, the last step of every grant (authorization code, device code, client credentials,
 * jwt-bearer, refresh): the request with the client's authentication (none, client_secret_basic or _post,
 * private_key_jwt) and, for DPoP, a proof (with the server's nonce when it asks for one, RFC 9449 §8); and the
 * tokens read from its answer. Callable on their own, as the MCP SDK's client/auth exports its steps.
 */
import { preview } from '../../errors.js';
import { ConnectionError } from '../errors.js';
import { clientSecretBasic } from '../../protocol/www-authenticate.js';
import { DPOP_ALG, type DpopKey, type DpopNonces, dpopKeyFor } from './dpop.js';
import type { Discovery } from './discovery.js';
import type { AuthChallenge } from '../errors.js';
import { str, stringList } from './resource.js';
import type { AuthOptions, StoredClient, StoredTokens } from './types.js';
import { type AuthHttpAnswer, authFetch, clientAssertionClaims, oauthErrorText, signJwt } from './wire.js';

/** What a token request needs besides the client and the grant's body. */
export interface TokenRequestOptions {
  /** The authorization server's issuer (a client assertion's audience). */
  issuer: string;
  /** The key to bind the tokens to (DPoP), or undefined for bearer tokens. */
  key: DpopKey | undefined;
  /** The authorization server's DPoP nonces, kept between requests. */
  nonces: DpopNonces;
  /** The client as the options gave it (its private key, for private_key_jwt). */
  given: AuthOptions['client'];
  signal: AbortSignal;
  /** Notes a secret made for the request (a client assertion), to keep it out of any output. */
  remember(secret: string): void;
}

/**
 * The tokens of a token endpoint's answer: an access token of a type this client uses (Bearer, or DPoP when a
 * proof was sent), the refresh token (a new one, else the one it had), when it expires, the scope granted.
 */
export function tokensFrom(answer: AuthHttpAnswer, scope: string | undefined, previousRefresh: string | undefined, key?: DpopKey): StoredTokens {
  const json = answer.json!;
  const accessToken = str(json.access_token);
  const tokenType = str(json.token_type) ?? 'Bearer';
  if (accessToken === undefined) throw new ConnectionError('AUTH_TOKEN', 'the token endpoint answered without an access_token');
  // A DPoP-bound token only when a proof was sent; an authorization server may still issue a bearer one.
  const dpop = key !== undefined && tokenType.toLowerCase() === 'dpop';
  if (!dpop && tokenType.toLowerCase() !== 'bearer') {
    throw new ConnectionError(
      'AUTH_TOKEN',
      `the token endpoint issued a ${preview(tokenType)} token; only Bearer${key === undefined ? '' : ' and DPoP'} tokens are used`,
    );
  }
  const tokens: StoredTokens = { accessToken, tokenType: dpop ? 'DPoP' : 'Bearer' };
  const refresh = str(json.refresh_token) ?? previousRefresh;
  if (refresh !== undefined) tokens.refreshToken = refresh;
  const expiresIn = Number(json.expires_in);
  if (json.expires_in !== undefined && Number.isFinite(expiresIn) && expiresIn >= 0) {
    tokens.expiresAt = Date.now() + expiresIn * 1000;
    tokens.lifetimeMs = expiresIn * 1000;
  }
  const granted = str(json.scope) ?? scope;
  if (granted !== undefined) tokens.scope = granted;
  return tokens;
}

/**
 * A POST to the token endpoint with the client's authentication, and with `key` a DPoP proof; an answer
 * `use_dpop_nonce` with a DPoP-Nonce (RFC 9449 §8) is sent once more with a new proof carrying it.
 */
export async function tokenRequest(
  endpoint: string,
  client: StoredClient,
  body: Record<string, string>,
  options: TokenRequestOptions,
): Promise<AuthHttpAnswer> {
  const answer = await tokenPost(endpoint, client, body, options);
  if (options.key === undefined) return answer;
  const fresh = options.nonces.note(new URL(endpoint), answer.headers.get('dpop-nonce') ?? undefined);
  if (answer.status !== 400 || answer.json?.error !== 'use_dpop_nonce' || !fresh) return answer;
  return tokenPost(endpoint, client, body, options);
}

function tokenPost(endpoint: string, client: StoredClient, body: Record<string, string>, options: TokenRequestOptions): Promise<AuthHttpAnswer> {
  const { issuer, key } = options;
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  const form = new URLSearchParams(body);
  switch (client.authMethod) {
    case 'client_secret_basic': {
      headers.authorization = clientSecretBasic(client.clientId, client.clientSecret ?? '');
      // The client_id in the body too (RFC 6749 §3.2.1 lets a client identify itself there): some servers (the
      // Python MCP SDK's) read it from the form only, and one that reads the header finds the same id.
      form.set('client_id', client.clientId);
      break;
    }
    case 'client_secret_post':
      form.set('client_id', client.clientId);
      form.set('client_secret', client.clientSecret ?? '');
      break;
    case 'private_key_jwt': {
      const given = options.given;
      if (given?.privateKey === undefined) throw new TypeError('auth.client.privateKey is needed for private_key_jwt');
      form.set('client_id', client.clientId);
      form.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
      const assertion = signJwt(clientAssertionClaims(client.clientId, issuer), given.privateKey, given.signingAlg ?? 'ES256');
      options.remember(assertion);
      form.set('client_assertion', assertion);
      break;
    }
    default:
      form.set('client_id', client.clientId);
  }
  if (key !== undefined) headers.dpop = key.proof('POST', endpoint, undefined, options.nonces.get(endpoint));
  return authFetch(endpoint, { method: 'POST', headers, body: form.toString(), signal: options.signal });
}

/**
 * The scope to ask for: the one pinned in the options; else the challenge's; else the resource's scopes_supported;
 * else none. A step-up adds the scopes held so far (`held`); offline_access is added when asked for, or (unless
 * refused) when the authorization server lists it.
 */
export function scopeFor(
  options: Pick<AuthOptions, 'scope' | 'offlineAccess'>,
  challenge: AuthChallenge | undefined,
  found: Discovery,
  held: ReadonlySet<string> | undefined,
): string | undefined {
  const asked = new Set<string>();
  const add = (text: string | undefined): void => {
    for (const s of text?.split(' ') ?? []) if (s !== '') asked.add(s);
  };
  if (options.scope !== undefined) add(options.scope);
  else if (challenge?.params.scope !== undefined) add(challenge.params.scope);
  else if (found.resourceScopes !== undefined) add(found.resourceScopes.join(' '));
  for (const s of held ?? []) asked.add(s);
  const listed = stringList(found.metadata?.scopes_supported)?.includes('offline_access') === true;
  if (options.offlineAccess ?? listed) asked.add('offline_access');
  return asked.size === 0 ? undefined : [...asked].join(' ');
}

/**
 * The key pair to bind a grant's tokens to: the stored one of this issuer, or a new one. undefined when the
 * authorization server does not list the algorithm and DPoP was only offered; a ConnectionError when the
 * protected resource `server` takes only DPoP-bound tokens (`required`) and the authorization server cannot bind.
 */
export function dpopKeyOf(found: Discovery, required: boolean, server: URL, stored: Parameters<typeof dpopKeyFor>[1]): DpopKey | undefined {
  const algs = stringList(found.metadata?.dpop_signing_alg_values_supported);
  if (algs?.includes(DPOP_ALG) !== true) {
    if (!required) return undefined;
    throw new ConnectionError(
      'AUTH_REQUIRED',
      `"${server.host}" takes only DPoP-bound tokens, and the authorization server ${found.issuer} does not list ${DPOP_ALG} in dpop_signing_alg_values_supported`,
    );
  }
  return dpopKeyFor(found.issuer, stored);
}

/**
 * Why a refresh failed, as the error to throw: AUTH_TOKEN when the refresh token (or the client) is dead, so that
 * a sign-in follows (invalid_grant and invalid_client, RFC 6749 §5.2, and any 400 or 401: the MCP SDK's example
 * server answers a revoked refresh token 400 server_error); AUTH_UNAVAILABLE when the server cannot answer now (a
 * 503, a 429), and the tokens stay for the next try.
 */
export function refreshRefused(answer: AuthHttpAnswer, scrub: (text: string) => string): ConnectionError {
  const error = answer.json?.error;
  const dead = error === 'invalid_grant' || error === 'invalid_client' || answer.status === 400 || answer.status === 401;
  if (!dead) {
    return new ConnectionError(
      'AUTH_UNAVAILABLE',
      `the token endpoint could not refresh the tokens now (kept for a later try): ${oauthErrorText(answer, scrub)}`,
      {
        status: answer.status,
      },
    );
  }
  return new ConnectionError('AUTH_TOKEN', `the token endpoint refused the refresh: ${oauthErrorText(answer, scrub)}`);
}
