// A real authorization server, oidc-provider, on 127.0.0.1 (port 0), with an MCP server in front of it on the same
// origin that accepts only its access tokens for the MCP URL as audience (RFC 8707). Dynamic registration, PKCE,
// refresh-token rotation and resource indicators are oidc-provider's own. Its login and consent step approves
// at once, for one user; the browser's part is played by `browser()`, which follows redirects and keeps cookies.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { calculateJwkThumbprint, EmbeddedJWK, jwtVerify } from 'jose';
import Provider from 'oidc-provider';
import { answerMcp } from './oauth-server.js';

const SCOPE = 'mcp:tools';

export interface OidcServer {
  issuer: string;
  url: string;
  provider: Provider;
  /** Token requests by grant type, and refresh tokens refused. */
  counts: { authorization_code: number; refresh_token: number; refreshRefused: number; authorizations: number; unauthorized: number };
  /** The path of every request the server got, in order. */
  paths: string[];
  /** With `dpop`: every proof the MCP endpoint accepted (its jti), and why it refused the others. */
  proofs: { accepted: string[]; refused: string[]; nonceChallenges: number };
  close(): Promise<void>;
}

/**
 * `dpop`: the provider binds tokens to DPoP keys and wants its nonce in every proof at the token endpoint; the MCP
 * endpoint takes only DPoP-bound tokens (challenge `DPoP`), checks each proof itself with jose (signature, typ,
 * htm, htu, iat, ath, a jti never seen, the key the token is bound to) and wants its own nonce too.
 */
export async function startOidc(options: { accessTtl?: number; dpop?: boolean; issuerPath?: string; device?: boolean } = {}): Promise<OidcServer> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = `${origin}/mcp`;
  // With `issuerPath` (a Keycloak-style issuer such as /realms/a), the provider is mounted there, as under
  // express's app.use(path, ...): its metadata is at <issuer>/.well-known/openid-configuration only.
  const mount = options.issuerPath ?? '';
  const issuer = `${origin}${mount}`;
  const counts = { authorization_code: 0, refresh_token: 0, refreshRefused: 0, authorizations: 0, unauthorized: 0 };
  const proofs = { accepted: [] as string[], refused: [] as string[], nonceChallenges: 0 };
  const paths: string[] = [];
  const provider = new Provider(issuer, {
    clients: [],
    scopes: ['openid', 'offline_access', SCOPE],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      deviceFlow: { enabled: options.device === true },
      dPoP: options.dpop === true ? { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true } : { enabled: false },
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
    paths.push(path);
    if (path === '/.well-known/oauth-protected-resource/mcp') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ resource: mcpUrl, authorization_servers: [issuer], scopes_supported: [SCOPE] }));
      return;
    }
    if (path.startsWith('/interaction/')) return void approve(provider, req, res, counts).catch((err: Error) => res.writeHead(500).end(err.message));
    if (path === '/mcp') return void resource(provider, mcpUrl, origin, req, res, counts, options.dpop === true ? proofs : undefined);
    if (mount !== '') {
      if (!path.startsWith(`${mount}/`)) return void res.writeHead(404).end();
      (req as { originalUrl?: string }).originalUrl = req.url ?? '';
      req.url = req.url!.slice(mount.length);
    }
    callback(req, res);
  });
  return {
    issuer,
    url: mcpUrl,
    provider,
    counts,
    proofs,
    paths,
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

/** The nonce the MCP endpoint wants in DPoP proofs. */
const RS_NONCE = 'resource-server-nonce-1';

/** The MCP endpoint: a live access token of this provider whose audience is the MCP URL (with `proofs`, DPoP-bound and proven), else 401. */
async function resource(
  provider: Provider,
  mcpUrl: string,
  origin: string,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  counts: OidcServer['counts'],
  proofs?: OidcServer['proofs'],
): Promise<void> {
  let body = '';
  req.setEncoding('utf8');
  for await (const chunk of req) body += chunk;
  const scheme = proofs === undefined ? 'Bearer' : 'DPoP';
  const presented = new RegExp(`^${scheme} (.+)$`).exec(req.headers.authorization ?? '')?.[1];
  const token = presented === undefined ? undefined : await provider.AccessToken.find(presented);
  const challenge = `${scheme} resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`;
  if (token === undefined || token.isExpired || token.aud !== mcpUrl) {
    counts.unauthorized++;
    res.writeHead(401, { 'www-authenticate': challenge, 'content-type': 'application/json' }).end('{"error":"invalid_token"}');
    return;
  }
  if (proofs !== undefined) {
    const problem = await proofProblem(req, mcpUrl, presented!, (token as unknown as { jkt?: string }).jkt, proofs.accepted);
    if (problem === 'use_dpop_nonce') {
      proofs.nonceChallenges++;
      res
        .writeHead(401, {
          'www-authenticate': `DPoP error="use_dpop_nonce", resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
          'dpop-nonce': RS_NONCE,
        })
        .end('{"error":"use_dpop_nonce"}');
      return;
    }
    if (problem !== undefined) {
      proofs.refused.push(problem);
      res
        .writeHead(401, { 'www-authenticate': `DPoP error="invalid_dpop_proof"`, 'content-type': 'application/json' })
        .end('{"error":"invalid_dpop_proof"}');
      return;
    }
  }
  answerMcp(req, res, body, `user: ${token.accountId}, scope: ${token.scope}`);
}

/** Why a request's DPoP proof does not prove it (RFC 9449 §4.3, §7.1), 'use_dpop_nonce', or undefined when it does. */
async function proofProblem(
  req: http.IncomingMessage,
  url: string,
  token: string,
  jkt: string | undefined,
  seen: string[],
): Promise<string | undefined> {
  const proof = req.headers.dpop;
  if (typeof proof !== 'string') return 'no DPoP header';
  try {
    const { payload, protectedHeader } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt', algorithms: ['ES256'] });
    if (payload.htm !== req.method) return 'htm';
    if (payload.htu !== url) return 'htu';
    if (typeof payload.iat !== 'number' || Math.abs(Date.now() / 1000 - payload.iat) > 60) return 'iat';
    if (payload.ath !== createHash('sha256').update(token).digest('base64url')) return 'ath';
    if (typeof payload.jti !== 'string' || seen.includes(payload.jti)) return 'jti replayed';
    if (jkt === undefined || (await calculateJwkThumbprint(protectedHeader.jwk!)) !== jkt) return 'not the key the token is bound to';
    if (payload.nonce !== RS_NONCE) return 'use_dpop_nonce';
    seen.push(payload.jti);
    return undefined;
  } catch (err) {
    return `unverifiable: ${(err as Error).message}`;
  }
}

/** The browser: opens the authorization URL and follows redirects, with cookies, until one goes to `redirectUri`. */
/**
 * The user's part of the device authorization grant (RFC 8628): opens the verification URL (with the code in
 * it), submits each form the provider shows (the code, the confirmation), signs in and consents through the
 * interaction, until a page with no form: the provider's "you may close this" page.
 */
export async function deviceBrowser(url: string): Promise<void> {
  const cookies = new Map<string, string>();
  let next: { url: string; form?: URLSearchParams } = { url };
  for (let hops = 0; hops < 20; hops++) {
    const res = await fetch(next.url, {
      redirect: 'manual',
      method: next.form === undefined ? 'GET' : 'POST',
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(next.form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      },
      ...(next.form === undefined ? {} : { body: next.form.toString() }),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
    const location = res.headers.get('location');
    if (location !== null) {
      await res.body?.cancel();
      next = { url: new URL(location, next.url).href };
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`the provider answered ${res.status} at ${next.url}: ${html.slice(0, 200)}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (action === undefined) return;
    const form = new URLSearchParams();
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) form.set(m[1]!, m[2]!);
    next = { url: new URL(action.replaceAll('&amp;', '&'), next.url).href, form };
  }
  throw new Error('too many steps');
}

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
