// An authorization server and an MCP server that checks its bearer tokens, in one node:http server on 127.0.0.1
// (port 0), with faults to inject: short-lived tokens, rotation with reuse detection, revocation, forgotten
// clients, wrong issuers and resources, no PKCE, huge metadata, slow token answers, a server that echoes the token.
// It counts and logs every request, so that tests can say what the client sent and where. Written without the
// code under test.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

/** A client's redirect URIs include this: any loopback redirect is taken. */
const LOOPBACK = 'loopback';

export interface OAuthFaults {
  /** Seconds an access token lives. @defaultValue 3600 */
  accessTtl?: number;
  /** Issue refresh tokens. @defaultValue true */
  refresh?: boolean;
  /** The authorization server's scopes_supported. */
  scopesSupported?: string[];
  /** The protected resource's scopes_supported. */
  resourceScopes?: string[];
  /** A scope every MCP request needs: a token without it gets 403 insufficient_scope naming it. */
  requiredScope?: string;
  /** The scope a 401's challenge names (none when unset). */
  challengeScope?: string;
  /** Grant tokens with no scope, whatever was asked. */
  stripScope?: boolean;
  /** The protected resource metadata's `resource`, instead of the MCP URL. */
  resource?: string;
  /** The issuer the authorization server's metadata names, instead of its own. */
  issuer?: string;
  /** Advertise RFC 9207 and put this in the redirect's `iss` ('right' is the issuer). */
  iss?: 'right' | 'wrong';
  /** Leave code_challenge_methods_supported out. */
  noPkce?: boolean;
  /** Pad the authorization server metadata to this many bytes. */
  metadataBytes?: number;
  /** Answer token requests after this long. */
  tokenDelayMs?: number;
  /** The MCP endpoint answers tools/call with a 500 whose body echoes the request's Authorization header. */
  echoToken?: boolean;
  /** The MCP endpoint answers every request with a 307 to this URL. */
  redirectTo?: string;
  /** A refused refresh echoes the presented refresh token in its error_description. */
  echoRefresh?: boolean;
  /** The authorization endpoint redirects with this error instead of a code. */
  deny?: string;
  /**
   * As the Python MCP SDK's authorization server: clients are confidential (client_secret_basic only), and the
   * token endpoint reads client_id from the form only, the secret from the Basic header.
   */
  basicClientIdFromForm?: boolean;
  /** Refresh requests get this status and a body that is no OAuth error (a 503 or 429 of a busy server); nothing is spent. */
  refreshStatus?: number | undefined;
  /** Refresh requests get this status and JSON body instead (the MCP SDK's example: 400 server_error for a revoked one); nothing is spent. */
  refreshAnswer?: { status: number; body: Record<string, unknown> } | undefined;
  /** A spent refresh token presented again revokes every token of its client (the family), as rotating providers do. */
  revokeOnReuse?: boolean;
  /** As Entra ID: an authorization request with a `resource` parameter is refused (AADSTS9010010); one without is granted. */
  refuseResource?: boolean;
}

export interface Logged {
  method: string;
  path: string;
  authorization: string | undefined;
  body: string;
  /** The status answered. */
  status?: number;
}

interface Token {
  scope: string;
  expiresAt: number;
  clientId: string;
}

export class OAuthServer {
  readonly server: http.Server;
  faults: OAuthFaults;
  readonly log: Logged[] = [];
  readonly counts = { authorize: 0, register: 0, code: 0, refresh: 0, clientCredentials: 0, refreshReused: 0 };
  readonly #clients = new Map<string, { secret: string | undefined; redirectUris: string[] }>();
  readonly #codes = new Map<string, { challenge: string; clientId: string; redirectUri: string; scope: string; resource: string | undefined }>();
  readonly #access = new Map<string, Token>();
  /** Refresh tokens: live ones map to their grant; spent ones (rotated) to 'spent'. */
  readonly #refresh = new Map<string, Token | 'spent'>();
  /** The resource indicators seen in authorization and token requests, in order. */
  readonly resources: Array<string | undefined> = [];

  private constructor(faults: OAuthFaults) {
    this.faults = faults;
    this.server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', this.origin);
        const logged: Logged = { method: req.method ?? '', path: url.pathname, authorization: req.headers.authorization, body };
        this.log.push(logged);
        res.on('finish', () => (logged.status = res.statusCode));
        void this.#route(req, res, url, body).catch((err: Error) => {
          if (!res.headersSent) res.writeHead(500).end(err.message);
        });
      });
    });
  }

  static async start(faults: OAuthFaults = {}): Promise<OAuthServer> {
    const s = new OAuthServer(faults);
    await new Promise<void>((resolve) => s.server.listen(0, '127.0.0.1', resolve));
    return s;
  }

  get origin(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The MCP endpoint. */
  get url(): string {
    return `${this.origin}/mcp`;
  }

  /** Every access token stops working (a revocation on the server's side). */
  revokeAccess(): void {
    this.#access.clear();
  }

  /** Every refresh token stops working. */
  revokeRefresh(): void {
    this.#refresh.clear();
  }

  /** A client registered by hand (no dynamic registration), taking any loopback redirect (RFC 8252 §7.3). */
  preRegister(clientId: string, secret: string | undefined): void {
    this.#clients.set(clientId, { secret, redirectUris: [LOOPBACK] });
  }

  /** The server forgets every registered client (a database reset). */
  forgetClients(): void {
    this.#clients.clear();
  }

  /** Requests to the authorization server's own endpoints (metadata, register, authorize, token). */
  get authServerRequests(): Logged[] {
    return this.log.filter((l) => !['/mcp', '/sse', '/messages'].includes(l.path));
  }

  /** Requests to the MCP endpoints (Streamable HTTP, and the HTTP+SSE transport's stream and messages). */
  get mcpRequests(): Logged[] {
    return this.log.filter((l) => l.path === '/mcp' || l.path === '/sse' || l.path === '/messages');
  }

  /** The HTTP+SSE transport's stream, while one is open. */
  #sse: http.ServerResponse | undefined;

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  async #route(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: string): Promise<void> {
    const json = (status: number, value: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }).end(JSON.stringify(value));
    };
    const f = this.faults;
    switch (url.pathname) {
      case '/.well-known/oauth-protected-resource/mcp':
        return json(200, {
          resource: f.resource ?? this.url,
          authorization_servers: [this.origin],
          ...(f.resourceScopes === undefined ? {} : { scopes_supported: f.resourceScopes }),
        });
      case '/.well-known/oauth-authorization-server': {
        const metadata: Json = {
          issuer: f.issuer ?? this.origin,
          authorization_endpoint: `${this.origin}/authorize`,
          token_endpoint: `${this.origin}/token`,
          registration_endpoint: `${this.origin}/register`,
          response_types_supported: ['code'],
          grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
          token_endpoint_auth_methods_supported: f.basicClientIdFromForm ? ['client_secret_basic'] : ['none', 'client_secret_basic'],
          ...(f.noPkce ? {} : { code_challenge_methods_supported: ['S256'] }),
          ...(f.scopesSupported === undefined ? {} : { scopes_supported: f.scopesSupported }),
          ...(f.iss === undefined ? {} : { authorization_response_iss_parameter_supported: true }),
        };
        if (f.metadataBytes !== undefined) metadata.padding = 'x'.repeat(f.metadataBytes);
        return json(200, metadata);
      }
      case '/register': {
        this.counts.register++;
        const asked = JSON.parse(body) as Json;
        const clientId = `client-${randomBytes(6).toString('hex')}`;
        const secret = asked.token_endpoint_auth_method === 'none' ? undefined : `secret-${randomBytes(12).toString('hex')}`;
        this.#clients.set(clientId, { secret, redirectUris: (asked.redirect_uris as string[]) ?? [] });
        return json(201, { client_id: clientId, ...(secret === undefined ? {} : { client_secret: secret }), ...asked });
      }
      case '/authorize': {
        this.counts.authorize++;
        const q = url.searchParams;
        const redirect = new URL(q.get('redirect_uri') ?? '');
        const client = this.#clients.get(q.get('client_id') ?? '');
        const loopback = client?.redirectUris.includes(LOOPBACK) === true && redirect.hostname === '127.0.0.1';
        if (client === undefined || (!loopback && !client.redirectUris.includes(redirect.href))) return json(400, { error: 'invalid_request' });
        this.resources.push(q.get('resource') ?? undefined);
        if (f.deny !== undefined) {
          redirect.searchParams.set('error', f.deny);
        } else if (f.refuseResource === true && q.has('resource')) {
          redirect.searchParams.set('error', 'invalid_request');
          redirect.searchParams.set(
            'error_description',
            "AADSTS9010010: The resource parameter provided in the request doesn't match with the requested scopes.",
          );
        } else {
          const code = randomBytes(16).toString('hex');
          this.#codes.set(code, {
            challenge: q.get('code_challenge') ?? '',
            clientId: q.get('client_id')!,
            redirectUri: redirect.href,
            scope: q.get('scope') ?? '',
            resource: q.get('resource') ?? undefined,
          });
          redirect.searchParams.set('code', code);
        }
        redirect.searchParams.set('state', q.get('state') ?? '');
        if (f.iss !== undefined) redirect.searchParams.set('iss', f.iss === 'right' ? this.origin : 'http://evil.example');
        res.writeHead(302, { location: redirect.href }).end();
        return;
      }
      case '/token':
        if (f.tokenDelayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, f.tokenDelayMs));
        return this.#token(req, new URLSearchParams(body), json);
      case '/mcp':
        return this.#mcp(req, res, body, json);
      case '/sse':
      case '/messages':
        return this.#legacySse(req, res, url.pathname, body, json);
      default:
        return json(404, { error: 'not_found' });
    }
  }

  #clientOf(req: http.IncomingMessage, form: URLSearchParams): string | undefined {
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
    let id = form.get('client_id') ?? undefined;
    let secret = form.get('client_secret') ?? undefined;
    if (basic !== null) {
      const [i, s] = Buffer.from(basic[1]!, 'base64').toString().split(':').map(decodeURIComponent);
      if (!this.faults.basicClientIdFromForm) id = i;
      secret = s;
    }
    const client = id === undefined ? undefined : this.#clients.get(id);
    if (client === undefined || client.secret !== secret) return undefined;
    return id;
  }

  #token(req: http.IncomingMessage, form: URLSearchParams, json: (status: number, value: unknown) => void): void {
    const clientId = this.#clientOf(req, form);
    if (clientId === undefined) return json(401, { error: 'invalid_client' });
    const grant = form.get('grant_type');
    this.resources.push(form.get('resource') ?? undefined);
    let scope: string;
    if (grant === 'authorization_code') {
      this.counts.code++;
      const code = this.#codes.get(form.get('code') ?? '');
      this.#codes.delete(form.get('code') ?? '');
      const verifier = form.get('code_verifier') ?? '';
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      if (code === undefined || code.clientId !== clientId || code.challenge !== challenge || code.redirectUri !== form.get('redirect_uri')) {
        return json(400, { error: 'invalid_grant' });
      }
      if (code.resource !== (form.get('resource') ?? undefined)) return json(400, { error: 'invalid_target' });
      scope = this.faults.stripScope ? '' : code.scope;
    } else if (grant === 'refresh_token') {
      this.counts.refresh++;
      if (this.faults.refreshStatus !== undefined) return json(this.faults.refreshStatus, { message: 'busy, try again later' });
      if (this.faults.refreshAnswer !== undefined) return json(this.faults.refreshAnswer.status, this.faults.refreshAnswer.body);
      const presented = form.get('refresh_token') ?? '';
      const found = this.#refresh.get(presented);
      if (found === 'spent') {
        this.counts.refreshReused++;
        if (this.faults.revokeOnReuse === true) this.#revokeFamily(clientId);
      }
      if (found === undefined || found === 'spent' || found.clientId !== clientId) {
        return json(400, { error: 'invalid_grant', ...(this.faults.echoRefresh ? { error_description: `unknown refresh token ${presented}` } : {}) });
      }
      // Rotation: the presented token is spent; a second use is a reuse.
      this.#refresh.set(presented, 'spent');
      scope = found.scope;
    } else {
      return json(400, { error: 'unsupported_grant_type' });
    }
    const ttl = this.faults.accessTtl ?? 3600;
    const access = `at-${randomBytes(16).toString('hex')}`;
    this.#access.set(access, { scope, expiresAt: Date.now() + ttl * 1000, clientId });
    const answer: Json = { access_token: access, token_type: 'Bearer', expires_in: ttl, scope };
    if (this.faults.refresh !== false) {
      const refresh = `rt-${randomBytes(16).toString('hex')}`;
      this.#refresh.set(refresh, { scope, expiresAt: Infinity, clientId });
      answer.refresh_token = refresh;
    }
    json(200, answer);
  }

  /** Every access and refresh token of `clientId`: a reuse of a spent refresh token tells of a theft. */
  #revokeFamily(clientId: string): void {
    for (const [token, grant] of this.#access) if (grant.clientId === clientId) this.#access.delete(token);
    for (const [token, grant] of this.#refresh) if (grant !== 'spent' && grant.clientId === clientId) this.#refresh.delete(token);
  }

  /** The token a request carries, when it is live; else the 401 has been answered. */
  #bearer(req: http.IncomingMessage, json: (status: number, value: unknown, headers?: Record<string, string>) => void): Token | undefined {
    const presented = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const token = presented === undefined ? undefined : this.#access.get(presented);
    if (token !== undefined && token.expiresAt > Date.now()) return token;
    json(
      401,
      { error: 'invalid_token' },
      { 'www-authenticate': `Bearer resource_metadata="${this.origin}/.well-known/oauth-protected-resource/mcp"` },
    );
    return undefined;
  }

  /** The deprecated HTTP+SSE transport: GET /sse names /messages, where each POST is answered on the stream. */
  #legacySse(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
    body: string,
    json: (status: number, value: unknown, headers?: Record<string, string>) => void,
  ): void {
    const token = this.#bearer(req, json);
    if (token === undefined) return;
    if (path === '/sse') {
      this.#sse = res;
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write('event: endpoint\ndata: /messages\n\n');
      return;
    }
    const stream = this.#sse;
    if (stream === undefined) return json(409, { error: 'no stream' });
    // The answer goes on the stream: answerMcp writes into a stand-in response whose body becomes an event.
    const sink = {
      writeHead: () => sink,
      end: (text?: string) => {
        if (text) stream.write(`event: message\ndata: ${text}\n\n`);
      },
    } as unknown as http.ServerResponse;
    answerMcp(req, sink, body, `scope: ${token.scope}`);
    res.writeHead(202).end();
  }

  #mcp(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: string,
    json: (status: number, value: unknown, headers?: Record<string, string>) => void,
  ): void {
    const f = this.faults;
    if (f.redirectTo !== undefined) {
      res.writeHead(307, { location: f.redirectTo }).end();
      return;
    }
    const challenge = (extra: string, scope: string | undefined): string =>
      `Bearer resource_metadata="${this.origin}/.well-known/oauth-protected-resource/mcp"${extra}${scope === undefined ? '' : `, scope="${scope}"`}`;
    const presented = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const token = presented === undefined ? undefined : this.#access.get(presented);
    if (token === undefined || token.expiresAt <= Date.now()) {
      return json(
        401,
        { error: 'invalid_token' },
        { 'www-authenticate': challenge(presented === undefined ? '' : ', error="invalid_token"', f.challengeScope) },
      );
    }
    if (f.requiredScope !== undefined && !token.scope.split(' ').includes(f.requiredScope)) {
      return json(403, { error: 'insufficient_scope' }, { 'www-authenticate': challenge(', error="insufficient_scope"', f.requiredScope) });
    }
    if (f.echoToken && body.includes('"tools/call"')) {
      // The token alone, as a careless server might put it in a message: no "Bearer" before it to give it away.
      return json(500, { error: `cannot run it for ${presented}` });
    }
    answerMcp(req, res, body, `scope: ${token.scope}`);
  }
}

/**
 * A small legacy-era MCP server's answers (a JSON body each): server/discover refused as a legacy server does,
 * initialize, tools/list with one tool, and tools/call answering `text`.
 */
export function answerMcp(req: http.IncomingMessage, res: http.ServerResponse, body: string, text: string): void {
  const json = (status: number, value: unknown): void =>
    void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  if (req.method !== 'POST') return json(405, { error: 'method not allowed' });
  const msg = JSON.parse(body) as Json;
  if (!('id' in msg)) {
    res.writeHead(202).end();
    return;
  }
  const reply = (result: unknown): void => json(200, { jsonrpc: '2.0', id: msg.id, result });
  switch (msg.method) {
    case 'server/discover':
      return json(200, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    case 'initialize':
      return reply({ protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'oauth-test', version: '1.0.0' } });
    case 'tools/list':
      return reply({ tools: [{ name: 'whoami', inputSchema: { type: 'object' } }] });
    case 'tools/call':
      return reply({ content: [{ type: 'text', text }] });
    default:
      return reply({});
  }
}

/** A user agent that approves at once: asks for the authorization URL and takes its redirect, never following it. */
export async function headlessAuthorize({ url }: { url: URL }): Promise<string> {
  const res = await fetch(url, { redirect: 'manual' });
  await res.body?.cancel();
  const location = res.headers.get('location');
  if (location === null) throw new Error(`the authorization endpoint answered ${res.status} without a redirect`);
  return new URL(location, url).href;
}
