/*
 * The small pieces of the authorization flow that touch bytes: the WWW-Authenticate header, bounded requests to
 * authorization servers, PKCE, and signed JWTs (private_key_jwt), all with node's built-ins.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { createHash, createPrivateKey, type KeyObject, randomBytes, randomUUID, sign } from 'node:crypto';
import { preview, reasonText } from '../../errors.js';
import { ConnectionError } from '../errors.js';
import { agentFor, proxyFor } from '../proxy.js';

export { authChallenge, bearerChallenge, parseChallenges } from '../../protocol/www-authenticate.js';

/** The largest metadata document or token response read (a server could send gigabytes). */
const MAX_AUTH_BODY_BYTES = 256 * 1024;
/** How long one request to an authorization server may take. */
const AUTH_REQUEST_TIMEOUT_MS = 30_000;

function base64url(bytes: Buffer): string {
  return bytes.toString('base64url');
}

/** A PKCE pair (RFC 7636): a 43-character verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = base64url(randomBytes(32));
  return { verifier, challenge: base64url(createHash('sha256').update(verifier).digest()) };
}

export function randomState(): string {
  return base64url(randomBytes(24));
}

/**
 * A signed JWT (RFC 7519) for private_key_jwt client authentication (RFC 7523 §2.2): ES256 as JOSE wants it
 * (the raw r||s signature, not DER), or RS256.
 */
export function signJwt(claims: Record<string, unknown>, key: string | KeyObject, alg: 'ES256' | 'RS256'): string {
  const privateKey = typeof key === 'string' ? createPrivateKey(key) : key;
  const header = base64url(Buffer.from(JSON.stringify({ alg, typ: 'JWT' })));
  const body = base64url(Buffer.from(JSON.stringify(claims)));
  const input = `${header}.${body}`;
  const signature =
    alg === 'ES256'
      ? sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' })
      : sign('sha256', Buffer.from(input), privateKey);
  return `${input}.${base64url(signature)}`;
}

/** The claims of a client assertion for `clientId` at `audience`, good for 5 minutes. */
export function clientAssertionClaims(clientId: string, audience: string): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return { iss: clientId, sub: clientId, aud: audience, jti: randomUUID(), iat: now, exp: now + 300 };
}

export interface AuthHttpAnswer {
  status: number;
  headers: Headers;
  /** The body, read up to MAX_AUTH_BODY_BYTES. */
  text: string;
  /** The body as JSON, when it is a JSON object. */
  json: Record<string, unknown> | undefined;
}

/**
 * One request to an authorization server or a metadata document: never a redirect followed (a token endpoint's
 * credentials must not follow one elsewhere; a metadata redirect is a miss), at most MAX_AUTH_BODY_BYTES read,
 * at most AUTH_REQUEST_TIMEOUT_MS. Network errors and timeouts are ConnectionErrors naming the URL's origin.
 */
export async function authFetch(
  url: string | URL,
  init: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal | undefined } = {},
): Promise<AuthHttpAnswer> {
  const timeout = AbortSignal.timeout(AUTH_REQUEST_TIMEOUT_MS);
  const signal = init.signal === undefined ? timeout : AbortSignal.any([init.signal, timeout]);
  const where = new URL(url).origin;
  const headers = { accept: 'application/json', ...init.headers };
  const proxy = proxyFor(new URL(url));
  let res: Response | { status: number; headers: Headers; read: () => Promise<string> };
  try {
    res =
      proxy === undefined
        ? await fetch(url, {
            method: init.method ?? 'GET',
            headers,
            ...(init.body === undefined ? {} : { body: init.body }),
            redirect: 'manual',
            signal,
          })
        : await throughProxy(new URL(url), init.method ?? 'GET', headers, init.body, signal);
  } catch (err) {
    if (timeout.aborted) throw new ConnectionError('AUTH_TIMEOUT', `${where} did not answer within ${AUTH_REQUEST_TIMEOUT_MS} ms`);
    if (init.signal?.aborted) throw new ConnectionError('AUTH_TIMEOUT', `the sign-in was given up on while waiting for ${where}`);
    throw new ConnectionError('AUTH_TOKEN', `cannot reach ${where}: ${(err as Error).message}`, { cause: err });
  }
  const answer = res;
  const text = await ('read' in answer ? answer.read() : readLimited(answer, MAX_AUTH_BODY_BYTES)).catch((err: Error) => {
    throw new ConnectionError(timeout.aborted ? 'AUTH_TIMEOUT' : 'AUTH_TOKEN', `reading the answer of ${where}: ${err.message}`);
  });
  let json: Record<string, unknown> | undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) json = value as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/**
 * The request of authFetch() through a proxy's tunnel (fetch takes no agent): node:http(s) on agentFor()'s
 * agent, no redirect followed, the body read up to MAX_AUTH_BODY_BYTES.
 */
function throughProxy(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal,
): Promise<{ status: number; headers: Headers; read: () => Promise<string> }> {
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(url, { method, headers, agent: agentFor(url, {}), signal }, (res) => {
      const answerHeaders = new Headers();
      for (const [name, value] of Object.entries(res.headers)) {
        if (value !== undefined) answerHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
      }
      const read = (): Promise<string> =>
        new Promise((done, fail) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_AUTH_BODY_BYTES) {
              res.destroy();
              fail(new Error(`the body is larger than ${MAX_AUTH_BODY_BYTES} bytes`));
            } else chunks.push(chunk);
          });
          res.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
          res.on('error', fail);
        });
      resolve({ status: res.statusCode ?? 0, headers: answerHeaders, read });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A response body as text, cut off (and the connection dropped) past `limit` bytes. */
async function readLimited(res: Response, limit: number): Promise<string> {
  if (res.body === null) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel();
      throw new Error(`the body is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * An OAuth error answer (`error`, `error_description`) as short printable text. `scrub` replaces the caller's
 * secrets first: a server may echo one, and shortened after, only a part of it would be left to find.
 */
export function oauthErrorText(answer: AuthHttpAnswer, scrub: (text: string) => string = (text) => text): string {
  const error = typeof answer.json?.error === 'string' ? answer.json.error : undefined;
  const description = typeof answer.json?.error_description === 'string' ? answer.json.error_description : undefined;
  if (error !== undefined) return preview(scrub(description === undefined ? error : `${error}: ${description}`));
  return `HTTP ${answer.status}${answer.text === '' ? '' : `: ${reasonText(scrub(answer.text))}`}`;
}
