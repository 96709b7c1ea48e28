/*
 * Ways to get a grant: a browser sent to the authorization server with a loopback redirect (RFC 8252), and
 * cross-app access (an identity provider's ID token exchanged for an ID-JAG, presented with the jwt-bearer grant).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { preview } from '../../errors.js';
import { requestTarget } from '../../protocol/target.js';
import { ConnectionError } from '../errors.js';
import type { AuthorizeRequest, JwtBearerContext, JwtBearerGrant } from './types.js';
import { authFetch, oauthErrorText } from './wire.js';
import { replaceSecrets } from '../../redaction.js';

export interface LoopbackAuthorizerOptions {
  /** The port of the callback server on 127.0.0.1. @defaultValue 0 (any free port; the same one again later) */
  port?: number;
  /** @defaultValue '/callback' */
  path?: string;
  /**
   * Shows the user the URL to open, once the callback server listens: open a browser, print it. Called with the
   * authorization URL and the redirect URI it waits on.
   */
  open?: (url: URL, redirectUri: string) => void | Promise<void>;
  /** Lines read from here are taken as the redirected URL pasted by hand (for a browser on another machine). */
  paste?: NodeJS.ReadableStream;
  /** @defaultValue 300000 (5 minutes) */
  timeoutMs?: number;
}

/** An authorize() that brings its own redirect URI: a callback server on 127.0.0.1. */
export interface LoopbackAuthorizer {
  (req: AuthorizeRequest): Promise<URL>;
  /** Starts the callback server (if it is not listening) and gives its redirect URI. */
  redirectUri(): Promise<string>;
  /** Stops the callback server. */
  close(): Promise<void>;
}

const PAGE_HEADERS = { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' };

/**
 * The callback server's answer to one request: only a GET of `path` whose state is that of a sign-in under way
 * ends it (`waiting`), with the redirect as sent, relative to `uri`.
 */
function answerCallback(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  path: string,
  waiting: Map<string, (url: URL) => void>,
  uri: string,
): void {
  // Any page can make the browser send anything here: a target that is not a path is 400, never a throw.
  const target = requestTarget(req.url);
  if (target === undefined) {
    res.writeHead(400, PAGE_HEADERS).end('Bad request.\n');
    return;
  }
  if (req.method !== 'GET' || target.path !== path) {
    res.writeHead(404, PAGE_HEADERS).end('Not found.\n');
    return;
  }
  const done = waiting.get(target.query.get('state') ?? '');
  if (done === undefined) {
    res.writeHead(400, PAGE_HEADERS).end('This sign-in is not one under way (its state does not match). Start it again from mcp-frame.\n');
    return;
  }
  const ok = target.query.has('code');
  res.writeHead(ok ? 200 : 400, PAGE_HEADERS).end(ok ? 'Signed in. You can close this tab.\n' : 'The sign-in was refused. You can close this tab.\n');
  // The query as sent (req.url begins with the path just matched).
  done(new URL(`${uri}${req.url!.slice(path.length)}`));
}

/**
 * A callback server on 127.0.0.1 that listens before the browser is opened, takes only the redirect that
 * carries the state of the sign-in under way, answers with `no-store`, and stops when the sign-in ends.
 */
export function loopbackAuthorizer(options: LoopbackAuthorizerOptions = {}): LoopbackAuthorizer {
  const path = options.path ?? '/callback';
  const timeoutMs = options.timeoutMs ?? 300_000;
  let server: http.Server | undefined;
  let port = options.port ?? 0;
  /** The sign-ins under way, by state: what ends each. One authorizer may serve several at once. */
  const waiting = new Map<string, (url: URL) => void>();

  const uri = (): string => `http://127.0.0.1:${port}${path}`;

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => answerCallback(req, res, path, waiting, uri());

  const listen = async (): Promise<void> => {
    if (server !== undefined) return;
    const attempt = (at: number): Promise<http.Server> =>
      new Promise((resolve, reject) => {
        const s = http.createServer(handle);
        s.once('error', reject);
        s.listen(at, '127.0.0.1', () => {
          s.off('error', reject);
          resolve(s);
        });
      });
    try {
      server = await attempt(port);
    } catch (err) {
      // The port chosen last time is taken now: any free one (a fixed port asked for is an error).
      if (options.port !== undefined && options.port !== 0) throw err;
      server = await attempt(0);
    }
    port = (server.address() as AddressInfo).port;
  };

  const close = async (): Promise<void> => {
    const s = server;
    server = undefined;
    if (s === undefined) return;
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  };

  const authorize = (async (req: AuthorizeRequest): Promise<URL> => {
    await listen();
    const state = req.url.searchParams.get('state') ?? '';
    let timer: NodeJS.Timeout | undefined;
    let lines: ReturnType<typeof createInterface> | undefined;
    try {
      return await new Promise<URL>((resolve, reject) => {
        waiting.set(state, resolve);
        timer = setTimeout(() => reject(new ConnectionError('AUTH_TIMEOUT', `no sign-in within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
        req.signal.addEventListener('abort', () => reject(req.signal.reason), { once: true });
        if (options.paste !== undefined) {
          lines = createInterface({ input: options.paste, crlfDelay: Infinity });
          lines.on('line', (line) => {
            let url: URL;
            try {
              url = new URL(line.trim());
            } catch {
              return;
            }
            if (url.searchParams.get('state') === state) resolve(url);
          });
        }
        Promise.resolve(options.open?.(req.url, req.redirectUri)).catch(reject);
      });
    } finally {
      clearTimeout(timer);
      lines?.close();
      waiting.delete(state);
      // The callback server stays while another sign-in still waits on it.
      if (waiting.size === 0) await close();
    }
  }) as LoopbackAuthorizer;
  authorize.redirectUri = async () => {
    await listen();
    return uri();
  };
  authorize.close = close;
  return authorize;
}

export interface CrossAppAccessOptions {
  /** The identity provider's token endpoint. */
  idpTokenEndpoint: string;
  /** The user's ID token from the identity provider (or a function that gets a current one). */
  idToken: string | (() => Promise<string>);
  /** This client's id at the identity provider. */
  idpClientId?: string;
  /** This client's secret at the identity provider, sent with client_secret_basic. */
  idpClientSecret?: string;
}

const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';

/**
 * Cross-app access (the MCP enterprise-managed authorization extension): the ID token is exchanged at the
 * identity provider (RFC 8693) for an ID-JAG whose audience is the authorization server, and the ID-JAG is
 * presented there with the jwt-bearer grant (RFC 7523), with the client's own authentication.
 */
export function crossAppAccess(options: CrossAppAccessOptions): JwtBearerGrant {
  return {
    type: 'jwt-bearer',
    async assertion(context: JwtBearerContext): Promise<string> {
      const idToken = typeof options.idToken === 'string' ? options.idToken : await options.idToken();
      // The ID token and the identity provider's secret are bearer credentials: never in an error the sign-in reports.
      context.secret?.(idToken);
      if (options.idpClientSecret !== undefined) context.secret?.(options.idpClientSecret);
      const form = new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        requested_token_type: ID_JAG,
        audience: context.issuer,
        subject_token: idToken,
        subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      });
      if (context.resource !== undefined) form.set('resource', context.resource);
      if (context.scope !== undefined) form.set('scope', context.scope);
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
      if (options.idpClientSecret !== undefined && options.idpClientId !== undefined) {
        const basic = `${encodeURIComponent(options.idpClientId)}:${encodeURIComponent(options.idpClientSecret)}`;
        headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
      } else if (options.idpClientId !== undefined) {
        form.set('client_id', options.idpClientId);
      }
      const answer = await authFetch(options.idpTokenEndpoint, { method: 'POST', headers, body: form.toString(), signal: context.signal });
      const jag = answer.json?.access_token;
      if (typeof jag === 'string') context.secret?.(jag);
      if (answer.status !== 200 || typeof jag !== 'string' || jag === '') {
        const scrub = (text: string): string => replaceSecrets(text, [idToken, options.idpClientSecret ?? '']);
        throw new ConnectionError('AUTH_TOKEN', `the identity provider refused the token exchange: ${oauthErrorText(answer, scrub)}`);
      }
      const type = answer.json?.issued_token_type;
      if (type !== undefined && type !== ID_JAG) {
        throw new ConnectionError('AUTH_TOKEN', `the identity provider issued a ${preview(String(type))}, not an ID-JAG`);
      }
      return jag;
    },
  };
}
