/*
 * The grants a user takes part in, as steps of their own: the authorization code grant's URL (PKCE S256, RFC 8707
 * resource, OpenID's prompt=consent for offline_access) and the checks of its redirect (state, RFC 9207 issuer,
 * error, code); the device authorization grant's answer (RFC 8628) and its polling of the token endpoint.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { preview } from '../../errors.js';
import { ConnectionError } from '../errors.js';
import type { Discovery } from './discovery.js';
import { str } from './resource.js';
import type { AuthOptions, DevicePrompt } from './types.js';
import { type AuthHttpAnswer, oauthErrorText } from './wire.js';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/**
 * What to add to an authorization server's refusal when it may be of the RFC 8707 `resource` parameter sent
 * (RFC 8707's invalid_target, or a description that names the parameter, as Entra ID's AADSTS9010010 does):
 * the option that leaves it out. Nothing when no resource was sent or the refusal is of something else.
 */
export function resourceHint(sent: string | undefined, error: string | null | undefined, description: string | null | undefined): string {
  if (sent === undefined) return '';
  if (error !== 'invalid_target' && !/\bresource\b|AADSTS9010010/i.test(description ?? '')) return '';
  return '; the authorization server may not take the RFC 8707 resource parameter: leave it out with auth.resource: false (the command line: --no-resource, or "resource": false in the entry\'s auth)';
}

/** Waits `ms`; a sign-in given up on (the connection closed) ends the wait with its reason. */
async function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch {
    throw signal.reason;
  }
}

/** The authorization request's URL: the code flow with PKCE S256, the state, the scope and resource asked for, and `extra`. */
export function authorizationUrl(
  found: Discovery,
  asked: {
    clientId: string;
    redirectUri: string;
    challenge: string;
    state: string;
    scope: string | undefined;
    resource: string | undefined;
    extra: Readonly<Record<string, string>>;
  },
): URL {
  const url = new URL(found.authorizationEndpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', asked.clientId);
  url.searchParams.set('redirect_uri', asked.redirectUri);
  url.searchParams.set('code_challenge', asked.challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', asked.state);
  if (asked.scope !== undefined) url.searchParams.set('scope', asked.scope);
  if (asked.resource !== undefined) url.searchParams.set('resource', asked.resource);
  // OpenID Connect Core §11: offline_access is granted only with prompt=consent; without it a provider drops
  // the scope and every expiry sends the user back to the browser. authorizeParams can still set another prompt.
  if (asked.scope?.split(' ').includes('offline_access') === true) url.searchParams.set('prompt', 'consent');
  for (const [key, value] of Object.entries(asked.extra)) url.searchParams.set(key, value);
  return url;
}

/**
 * The authorization code of the redirect `returned`, once it is this sign-in's (its state), from the right issuer
 * (RFC 9207, compared as strings exactly), and no refusal; else a ConnectionError saying which.
 */
export function codeOf(returned: URL, state: string, found: Discovery, resource: string | undefined): string {
  const params = returned.searchParams;
  if (params.get('state') !== state) {
    throw new ConnectionError('AUTH_DENIED', 'the redirect carries another state than the one sent: not from this sign-in');
  }
  const iss = params.get('iss');
  const issRequired = found.metadata?.authorization_response_iss_parameter_supported === true;
  // Compared as strings, exactly (RFC 9207 §2.4, SEP-2468): no case folding, port or trailing-slash normalization.
  if (!found.legacy && (iss !== null || issRequired) && iss !== found.issuer) {
    throw new ConnectionError('AUTH_ISSUER_MISMATCH', `the redirect names issuer ${preview(iss ?? '(none)')}, not ${found.issuer} (RFC 9207)`);
  }
  const error = params.get('error');
  if (error !== null) {
    const description = params.get('error_description');
    const text = preview(description === null ? error : `${error}: ${description}`);
    throw new ConnectionError('AUTH_DENIED', `the sign-in was refused: ${text}${resourceHint(resource, error, description)}`);
  }
  const code = params.get('code');
  if (code === null || code === '') throw new ConnectionError('AUTH_DENIED', 'the redirect carries no authorization code');
  return code;
}

/** A device authorization endpoint's answer (RFC 8628 §3.2): the code to poll with, and what to show the user. */
export interface DeviceAuthorization {
  deviceCode: string;
  /** Seconds between polls, as the server asked (5 by default). */
  intervalS: number;
  prompt: DevicePrompt;
}

/** The device authorization of `asked`, or a ConnectionError (AUTH_DENIED) with the server's refusal. */
export function deviceAuthorization(asked: AuthHttpAnswer, resource: string | undefined, scrub: (text: string) => string): DeviceAuthorization {
  const deviceCode = str(asked.json?.device_code);
  const userCode = str(asked.json?.user_code);
  const verificationUri = str(asked.json?.verification_uri);
  if (asked.status !== 200 || deviceCode === undefined || userCode === undefined || verificationUri === undefined) {
    const hint = resourceHint(resource, str(asked.json?.error), str(asked.json?.error_description));
    throw new ConnectionError('AUTH_DENIED', `the device authorization endpoint refused: ${oauthErrorText(asked, scrub)}${hint}`);
  }
  const expiresInS = typeof asked.json?.expires_in === 'number' ? asked.json.expires_in : 600;
  const intervalS = typeof asked.json?.interval === 'number' && asked.json.interval > 0 ? asked.json.interval : 5;
  const complete = str(asked.json?.verification_uri_complete);
  return {
    deviceCode,
    intervalS,
    prompt: { verificationUri, userCode, expiresInS, ...(complete === undefined ? {} : { verificationUriComplete: complete }) },
  };
}

/**
 * Polls the token endpoint (`poll` sends a body) with the device code at the server's interval, 5 s more on
 * each slow_down, until it answers with tokens (the answer is given back), refuses, or `limitMs` passes.
 */
export async function pollDeviceToken(
  poll: (body: Record<string, string>) => Promise<AuthHttpAnswer>,
  options: { device: DeviceAuthorization; resource: string | undefined; limitMs: number; signal: AbortSignal; scrub: (text: string) => string },
): Promise<AuthHttpAnswer> {
  const { device, limitMs } = options;
  const body: Record<string, string> = { grant_type: DEVICE_GRANT, device_code: device.deviceCode };
  if (options.resource !== undefined) body.resource = options.resource;
  const deadline = Date.now() + limitMs;
  let intervalS = device.intervalS;
  for (;;) {
    await abortableSleep(Math.min(intervalS * 1000, Math.max(0, deadline - Date.now())), options.signal);
    if (Date.now() >= deadline) throw new ConnectionError('AUTH_TIMEOUT', `no sign-in with the device code within ${limitMs} ms`);
    const answer = await poll(body);
    if (answer.status === 200 && answer.json !== undefined) return answer;
    const error = str(answer.json?.error);
    if (error === 'authorization_pending') continue;
    if (error === 'slow_down') {
      intervalS += 5;
      continue;
    }
    if (error === 'expired_token') throw new ConnectionError('AUTH_TIMEOUT', 'the device code expired before the sign-in was done');
    throw new ConnectionError(
      error === 'access_denied' ? 'AUTH_DENIED' : 'AUTH_TOKEN',
      `the token endpoint refused the device code: ${oauthErrorText(answer, options.scrub)}`,
    );
  }
}

/**
 * authorize() (a browser sign-in, a host's own) within `limitMs` and while `closed` is not aborted: its answer (the
 * redirect, as a URL or its text), AUTH_TIMEOUT past the limit, or the reason the session closed.
 */
export function authorizeWithin(
  authorize: NonNullable<AuthOptions['authorize']>,
  url: URL,
  redirectUri: string,
  closed: AbortSignal,
  limitMs: number,
): Promise<URL | string> {
  const timeout = AbortSignal.timeout(limitMs);
  const signal = AbortSignal.any([closed, timeout]);
  return new Promise<URL | string>((resolve, reject) => {
    const onAbort = (): void =>
      reject(timeout.aborted ? new ConnectionError('AUTH_TIMEOUT', `no sign-in within ${limitMs} ms`) : (closed.reason as ConnectionError));
    signal.addEventListener('abort', onAbort, { once: true });
    authorize({ url, redirectUri, signal })
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Whether a sign-in takes the device grant: asked for (`device`) and offered by the authorization server; asked
 * for always and not offered is a ConnectionError (AUTH_REQUIRED).
 */
export function deviceFlowOffered(found: Discovery, device: AuthOptions['device']): boolean {
  if (device === undefined) return false;
  const offered = str(found.metadata?.device_authorization_endpoint) !== undefined;
  if (!offered && device.when === 'always') {
    throw new ConnectionError('AUTH_REQUIRED', `the authorization server ${found.issuer} offers no device authorization grant (RFC 8628)`);
  }
  return offered;
}
