/*
 * Who the client is, the second step of a sign-in: a client ID metadata document when the authorization server
 * takes one (and one is given), else dynamic registration (RFC 7591), for the browser flow or the device grant.
 */
import { ConnectionError } from '../errors.js';
import type { Discovery } from './discovery.js';
import { applicationType, str, stringList } from './resource.js';
import type { AuthOptions, AuthRecord, StoredClient } from './types.js';
import { authFetch, oauthErrorText } from './wire.js';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** What registration needs besides discovery's findings. */
export interface RegisterOptions {
  /** The server signed in for (its host names it in errors). */
  server: URL;
  /** A client ID metadata document's URL, taken where the authorization server says it supports them. */
  clientMetadataUrl?: string | undefined;
  /** @defaultValue 'mcp-frame' */
  clientName?: string | undefined;
  /** Removes the session's secrets from a text the server sent (an error it echoes). */
  scrub(text: string): string;
}

/**
 * A client ID metadata document when the server takes one, else dynamic registration (RFC 7591): for the
 * browser flow (with `redirectUri`), or for the device grant (without one).
 */
export async function registerClient(
  found: Discovery,
  redirectUri: string | undefined,
  options: RegisterOptions,
  signal: AbortSignal,
): Promise<{ client: StoredClient; how: 'metadata-document' | 'dynamic' }> {
  const metadataUrl = options.clientMetadataUrl;
  if (metadataUrl !== undefined && found.metadata?.client_id_metadata_document_supported === true) {
    const client: StoredClient = {
      clientId: metadataUrl,
      authMethod: 'none',
      ...(redirectUri === undefined ? {} : { redirectUri }),
      issuer: found.issuer,
    };
    return { client, how: 'metadata-document' };
  }
  if (found.registrationEndpoint === undefined) {
    throw new ConnectionError(
      'AUTH_REQUIRED',
      `the authorization server ${found.issuer} takes no registration: give auth.client (a client registered with it)${metadataUrl === undefined ? ' or auth.clientMetadataUrl' : ''}`,
    );
  }
  const supported = stringList(found.metadata?.token_endpoint_auth_methods_supported);
  const method =
    supported === undefined || supported.includes('none')
      ? 'none'
      : supported.includes('client_secret_basic')
        ? 'client_secret_basic'
        : (supported.find((m) => m === 'client_secret_post') ?? 'none');
  const request = {
    client_name: options.clientName ?? 'mcp-frame',
    // OpenID registration defaults to "web", which refuses loopback redirects: say which kind of client this is.
    application_type: redirectUri === undefined ? 'native' : applicationType(redirectUri),
    redirect_uris: redirectUri === undefined ? [] : [redirectUri],
    grant_types: redirectUri === undefined ? [DEVICE_GRANT, 'refresh_token'] : ['authorization_code', 'refresh_token'],
    response_types: redirectUri === undefined ? [] : ['code'],
    token_endpoint_auth_method: method,
  };
  const answer = await authFetch(found.registrationEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request),
    signal,
  });
  const clientId = str(answer.json?.client_id);
  if (answer.status < 200 || answer.status >= 300 || clientId === undefined) {
    // No metadata anywhere and no registration at the 2025-03-26 default: the server takes a token, but offers
    // no sign-in (a static bearer token, say).
    if (found.legacy && found.metadata === undefined && [401, 403, 404, 405].includes(answer.status)) {
      throw new ConnectionError(
        'AUTH_REQUIRED',
        `"${options.server.host}" requires authorization but offers no OAuth sign-in (no metadata; ${found.registrationEndpoint} answered HTTP ${answer.status}): give its credentials in a header`,
      );
    }
    throw new ConnectionError('AUTH_DENIED', `the authorization server refused the registration: ${oauthErrorText(answer, options.scrub)}`);
  }
  const secret = str(answer.json?.client_secret);
  const registered = str(answer.json?.token_endpoint_auth_method) as StoredClient['authMethod'] | undefined;
  const authMethod =
    registered ??
    (secret === undefined
      ? 'none'
      : supported === undefined || supported.includes('client_secret_basic')
        ? 'client_secret_basic'
        : 'client_secret_post');
  const client: StoredClient = { clientId, authMethod, ...(redirectUri === undefined ? {} : { redirectUri }), issuer: found.issuer };
  if (secret !== undefined) client.clientSecret = secret;
  return { client, how: 'dynamic' };
}

/** The client a sign-in uses: the one the options give (its authentication method inferred), else the one registered. */
export function clientOf(given: AuthOptions['client'], record: AuthRecord): StoredClient | undefined {
  if (given === undefined) return record.client;
  return {
    clientId: given.clientId,
    ...(given.clientSecret === undefined ? {} : { clientSecret: given.clientSecret }),
    authMethod:
      given.authMethod ?? (given.privateKey !== undefined ? 'private_key_jwt' : given.clientSecret !== undefined ? 'client_secret_basic' : 'none'),
    issuer: record.issuer ?? '',
  };
}
