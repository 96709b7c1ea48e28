/*
 * Discovery, the first step of a sign-in (MCP "Authorization"): the protected resource metadata (RFC 9728, where
 * the challenge names it or at its well-known places), then its authorization server's metadata (RFC 8414, OpenID
 * configuration), or the 2025-03-26 fallbacks when the server publishes none. Each step is a function of its own,
 * callable and tested apart from a whole sign-in, as the MCP SDK's client/auth exports them.
 */
import { preview } from '../../errors.js';
import { type AuthChallenge, ConnectionError } from '../errors.js';
import { canonicalResource, resourceAllowed, secureEndpoint, str, stringList, trimSlash } from './resource.js';
import { authFetch } from './wire.js';

type Json = Record<string, unknown>;

/** What discovery found for one sign-in, reused for its token step. */
export interface Discovery {
  /** The resource indicator to send, or undefined for none. */
  resource: string | undefined;
  /** The protected resource's scopes_supported. */
  resourceScopes: string[] | undefined;
  issuer: string;
  /** The authorization server's metadata, when it has any. */
  metadata: Json | undefined;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  registrationEndpoint: string | undefined;
  /** The 2025-03-26 path (no protected resource metadata): the issuer is recorded, not enforced. */
  legacy: boolean;
  /** The protected resource takes only DPoP-bound tokens (dpop_bound_access_tokens_required). */
  dpopRequired: boolean;
}

/** Protected resource metadata, then the authorization server's; the 2025-03-26 fallbacks when there is none. */
export async function discover(server: URL, challenge: AuthChallenge | undefined, signal: AbortSignal): Promise<Discovery> {
  const named = challenge?.params.resource_metadata;
  let prm: Json | undefined;
  if (named !== undefined && named !== '') {
    let url: URL;
    try {
      url = new URL(named);
    } catch {
      throw new ConnectionError('AUTH_REQUIRED', `the challenge's resource_metadata is not a URL: ${preview(named)}`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new ConnectionError('AUTH_REQUIRED', `the challenge's resource_metadata is not an http(s) URL: ${preview(named)}`);
    }
    prm = await metadataAt(url, signal);
    if (prm === undefined) throw new ConnectionError('AUTH_REQUIRED', `no protected resource metadata at ${url.origin}${url.pathname}`);
  } else {
    const origin = server.origin;
    const path = trimSlash(server.pathname);
    const candidates = path === '' ? [] : [`${origin}/.well-known/oauth-protected-resource${path}`];
    candidates.push(`${origin}/.well-known/oauth-protected-resource`);
    for (const candidate of candidates) {
      prm = await metadataAt(new URL(candidate), signal);
      if (prm !== undefined) break;
    }
  }
  if (prm === undefined) return legacyDiscovery(server, signal);
  const resource = str(prm.resource);
  if (resource === undefined || !resourceAllowed(resource, server)) {
    throw new ConnectionError(
      'AUTH_RESOURCE_MISMATCH',
      `the protected resource metadata names resource ${preview(resource ?? '(none)')}, which is not ${canonicalResource(server)}: not signing in for it`,
    );
  }
  const issuer = stringList(prm.authorization_servers)?.[0];
  if (issuer === undefined) throw new ConnectionError('AUTH_REQUIRED', 'the protected resource metadata names no authorization server');
  let issuerUrl: URL;
  try {
    issuerUrl = new URL(issuer);
  } catch {
    throw new ConnectionError('AUTH_REQUIRED', `the authorization server is not a URL: ${preview(issuer)}`);
  }
  if (!secureEndpoint(issuerUrl))
    throw new ConnectionError('AUTH_REQUIRED', `the authorization server ${preview(issuer)} is not https (plain http only on this machine)`);
  const metadata = await authorizationServerMetadata(issuerUrl, signal);
  if (metadata !== undefined) {
    const said = str(metadata.issuer);
    // Identical to the issuer it was fetched for (RFC 8414 §3.3): a string comparison, nothing normalized.
    if (said !== issuer) {
      throw new ConnectionError(
        'AUTH_ISSUER_MISMATCH',
        `the metadata of ${issuer} names issuer ${preview(said ?? '(none)')} (RFC 8414 §3.3): not signing in`,
      );
    }
  }
  return {
    ...endpointsOf(issuer, issuerUrl, metadata, false, { resource, resourceScopes: stringList(prm.scopes_supported) }),
    dpopRequired: prm.dpop_bound_access_tokens_required === true,
  };
}

/** No protected resource metadata (2025-03-26): the server's origin is the authorization server. */
async function legacyDiscovery(server: URL, signal: AbortSignal): Promise<Discovery> {
  const base = new URL(server.origin);
  const metadata = await metadataAt(new URL('/.well-known/oauth-authorization-server', base), signal);
  const issuer = str(metadata?.issuer) ?? base.origin;
  return endpointsOf(issuer, base, metadata, true, { resource: undefined, resourceScopes: undefined });
}

function endpointsOf(
  issuer: string,
  base: URL,
  metadata: Json | undefined,
  legacy: boolean,
  found: { resource: string | undefined; resourceScopes: string[] | undefined },
): Discovery {
  const at = (key: string, fallback: string): string => str(metadata?.[key]) ?? new URL(fallback, base).href;
  const registration = metadata === undefined ? new URL('/register', base).href : str(metadata.registration_endpoint);
  for (const [name, url] of [
    ['authorization_endpoint', at('authorization_endpoint', '/authorize')],
    ['token_endpoint', at('token_endpoint', '/token')],
    ['registration_endpoint', registration],
  ] as const) {
    if (url === undefined) continue;
    if (!/^https?:\/\//.test(url)) throw new ConnectionError('AUTH_REQUIRED', `the ${name} is not an http(s) URL: ${preview(url)}`);
    // Codes, secrets and tokens travel there: in the clear only to this machine (the authorization spec's HTTPS rule).
    if (!secureEndpoint(url))
      throw new ConnectionError('AUTH_REQUIRED', `the ${name} ${preview(url)} is plain http on another host: it must be https`);
  }
  return {
    resource: legacy ? undefined : found.resource,
    resourceScopes: found.resourceScopes,
    issuer,
    metadata,
    authorizationEndpoint: at('authorization_endpoint', '/authorize'),
    tokenEndpoint: at('token_endpoint', '/token'),
    registrationEndpoint: registration,
    legacy,
    dpopRequired: false,
  };
}

/**
 * RFC 8414 metadata, then OpenID configuration: for an issuer with a path, the path-insertion forms and OpenID's
 * path-appended form, never the root form (it belongs to another issuer on the same host).
 */
export async function authorizationServerMetadata(issuer: URL, signal: AbortSignal): Promise<Json | undefined> {
  const path = trimSlash(issuer.pathname);
  const candidates =
    path === ''
      ? ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']
      : [`/.well-known/oauth-authorization-server${path}`, `/.well-known/openid-configuration${path}`, `${path}/.well-known/openid-configuration`];
  for (const candidate of candidates) {
    const found = await metadataAt(new URL(candidate, issuer.origin), signal);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A metadata document: a JSON object with status 200, else undefined (a 404, a redirect, HTML, ...). */
export async function metadataAt(url: URL, signal: AbortSignal): Promise<Json | undefined> {
  const answer = await authFetch(url, { signal, headers: { 'mcp-protocol-version': '2025-11-25' } });
  return answer.status === 200 ? answer.json : undefined;
}
