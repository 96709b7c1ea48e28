// A real authorization server, oidc-provider, on 127.0.0.1 (port 0), with an MCP server in front of it on the same
// origin that accepts only its access tokens for the MCP URL as audience (RFC 8707). Dynamic registration, PKCE,
// refresh-token rotation and resource indicators are oidc-provider's own. Its login and consent step approves
// at once, for one user; the browser's part is played by `browser()`, which follows redirects and keeps cookies.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { answerMcp } from './oauth-server.js';

const SCOPE = 'mcp:tools';

export interface OidcServer {
  issuer: string;
  url: string;
  provider: Provider;
  /** Token requests by grant type, and refresh tokens refused. */
  counts: { authorization_code: number; refresh_token: number; refreshRefused: number; authorizations: number; unauthorized: number };
  close(): Promise<void>;
}

export async function startOidc(options: { accessTtl?: number } = {}): Promise<OidcServer> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = `${origin}/mcp`;
  const counts = { authorization_code: 0, refresh_token: 0, refreshRefused: 0, authorizations: 0, unauthorized: 0 };
  const provider = new Provider(origin, {
    clients: [],
    scopes: ['openid', 'offline_access', SCOPE],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => mcpUrl,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (resource !== mcpUrl) throw new Error(`unknown resource ${resource}`);
          return { scope: SCOPE, audience: mcpUrl, accessTokenFormat: 'opaque', accessTokenTTL: options.accessTtl ?? 3600 };
        },
      },
    },
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    // Refresh tokens for the MCP resource whenever the client may use them (oidc-provider asks offline_access with prompt=consent).
    issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: () => true,
  } as ConstructorParameters<typeof Provider>[1]);
  provider.on('grant.success', (ctx) => {
    const type = ctx.oidc.params?.grant_type;
    if (type === 'authorization_code' || type === 'refresh_token') counts[type]++;
  });
  provider.on('grant.error', (ctx) => {
    if (ctx.oidc.params?.grant_type === 'refresh_token') counts.refreshRefused++;
  });
  const callback = provider.callback();
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const path = new URL(req.url ?? '/', origin).pathname;
    if (path === '/.well-known/oauth-protected-resource/mcp') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ resource: mcpUrl, authorization_servers: [origin], scopes_supported: [SCOPE] }));
      return;
    }
    if (path.startsWith('/interaction/')) return void approve(provider, req, res, counts).catch((err: Error) => res.writeHead(500).end(err.message));
    if (path === '/mcp') return void resource(provider, mcpUrl, origin, req, res, counts);
    callback(req, res);
  });
  return {
    issuer: origin,
    url: mcpUrl,
    provider,
    counts,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The user signs in and consents at once: a grant for what the client asked (its scopes, the resource's scope). */
async function approve(provider: Provider, req: http.IncomingMessage, res: http.ServerResponse, counts: OidcServer['counts']): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  counts.authorizations++;
  const params = details.params as { client_id: string; scope?: string; resource?: string };
  const grant = new provider.Grant({ accountId: 'user-1', clientId: params.client_id });
  // Every scope asked is one this provider knows (its `scopes`), granted as asked.
  if (params.scope !== undefined && params.scope !== '') grant.addOIDCScope(params.scope);
  if (params.resource !== undefined) grant.addResourceScope(params.resource, SCOPE);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId: 'user-1' }, consent: { grantId } }, { mergeWithLastSubmission: false });
}

/** The MCP endpoint: a live access token of this provider whose audience is the MCP URL, else 401. */
async function resource(
  provider: Provider,
  mcpUrl: string,
  origin: string,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  counts: OidcServer['counts'],
): Promise<void> {
  let body = '';
  req.setEncoding('utf8');
  for await (const chunk of req) body += chunk;
  const presented = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  const token = presented === undefined ? undefined : await provider.AccessToken.find(presented);
  if (token === undefined || token.isExpired || token.aud !== mcpUrl) {
    counts.unauthorized++;
    res
      .writeHead(401, {
        'www-authenticate': `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
        'content-type': 'application/json',
      })
      .end('{"error":"invalid_token"}');
    return;
  }
  answerMcp(req, res, body, `user: ${token.accountId}, scope: ${token.scope}`);
}

/** The browser: opens the authorization URL and follows redirects, with cookies, until one goes to `redirectUri`. */
export async function browser({ url, redirectUri }: { url: URL; redirectUri: string }): Promise<string> {
  const cookies = new Map<string, string>();
  let next = url.href;
  for (let hops = 0; hops < 20; hops++) {
    if (next.startsWith(redirectUri)) return next;
    const res = await fetch(next, { redirect: 'manual', headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
    await res.body?.cancel();
    const location = res.headers.get('location');
    if (location === null) throw new Error(`the authorization server answered ${res.status} without a redirect at ${next}`);
    next = new URL(location, next).href;
  }
  throw new Error('too many redirects');
}
