// A real identity provider for serve's sign-in: oidc-provider on 127.0.0.1 (port 0) issuing JWT access tokens
// (RFC 9068) for whatever resource a client names (RFC 8707), with the accounts given (their groups and email go
// into the tokens), dynamic registration and PKCE. Its signing keys are made here, so that a test can mint
// tokens with them that are wrong in one way only (audience, issuer, expiry), or with a key it does not publish.
// The user's part of a sign-in is played by `browser()` (see oidc-server.ts); `idp.user` says who signs in.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, exportJWK, generateKeyPair, type JWK, jwtVerify, SignJWT } from 'jose';
import Provider from 'oidc-provider';

export interface Account {
  groups?: string[];
  email?: string;
}

export interface Idp {
  issuer: string;
  provider: Provider;
  /** Who the next sign-in logs in as. @defaultValue the first account */
  user: string;
  /** Scopes granted at sign-ins, as asked, by account. */
  granted: string[][];
  /** The path of every request the provider got. */
  paths: string[];
  /** Each token exchange (RFC 8693) it answered or refused: the client, the parameters, and the subject. */
  exchanges: Array<{ client: string; params: Record<string, unknown>; subject: string | undefined; refused: boolean }>;
  /** A JWT signed with the provider's own key (or, with `stranger`, a key it does not publish): `claims` over sound defaults. */
  mint(claims: Record<string, unknown>, options?: { alg?: 'ES256' | 'RS256'; stranger?: boolean }): Promise<string>;
  close(): Promise<void>;
}

/** Scopes a resource may be granted (what a client asks, within these). */
const RESOURCE_SCOPES = ['mcp', 'admin', 'deploy'];

/** The client serve exchanges callers' tokens as (with `exchange`). */
export const EXCHANGE_CLIENT = { clientId: 'serve-gateway', clientSecret: 'exchange-secret-0123456789' };

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** The client serve introspects opaque tokens as (with `format: 'opaque'`). */
export const INTROSPECTION_CLIENT = { clientId: 'serve-resource-server', clientSecret: 'introspection-secret-0123456789' };

export async function startIdp(
  accounts: Record<string, Account>,
  options: { accessTtl?: number; format?: 'jwt' | 'opaque'; dpop?: boolean; exchange?: { refuse?: string[] } } = {},
): Promise<Idp> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const keys: Record<'RS256' | 'ES256', JWK> = {} as never;
  for (const alg of ['RS256', 'ES256'] as const) {
    const { privateKey } = await generateKeyPair(alg, { extractable: true });
    keys[alg] = { ...(await exportJWK(privateKey)), kid: `${alg.toLowerCase()}-1`, alg, use: 'sig' };
  }
  const granted: string[][] = [];
  const idp: Idp = {
    issuer,
    provider: undefined as never,
    user: Object.keys(accounts)[0]!,
    granted,
    paths: [],
    exchanges: [],
    async mint(claims, mint = {}) {
      const alg = mint.alg ?? 'ES256';
      const key = mint.stranger === true ? (await generateKeyPair(alg)).privateKey : keys[alg];
      const now = Math.floor(Date.now() / 1000);
      const payload = { iss: issuer, sub: idp.user, exp: now + 300, iat: now, scope: 'mcp', client_id: 'minted', ...claims };
      return new SignJWT(payload).setProtectedHeader({ alg, kid: mint.stranger === true ? 'stranger-1' : keys[alg].kid!, typ: 'at+jwt' }).sign(key);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: INTROSPECTION_CLIENT.clientId,
        client_secret: INTROSPECTION_CLIENT.clientSecret,
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
      ...(options.exchange === undefined
        ? []
        : [
            {
              client_id: EXCHANGE_CLIENT.clientId,
              client_secret: EXCHANGE_CLIENT.clientSecret,
              grant_types: [TOKEN_EXCHANGE],
              redirect_uris: [],
              response_types: [],
            },
          ]),
    ],
    jwks: { keys: [keys.RS256, keys.ES256] },
    scopes: ['openid', 'offline_access', ...RESOURCE_SCOPES],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      introspection: { enabled: true, allowedPolicy: () => true },
      // With `dpop`: a token asked for with a DPoP proof is bound to its key (cnf.jkt), no nonce asked.
      dPoP: { enabled: options.dpop === true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          scope: RESOURCE_SCOPES.join(' '),
          audience: resource,
          accessTokenFormat: options.format ?? 'jwt',
          accessTokenTTL: options.accessTtl ?? 3600,
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    extraTokenClaims: (_ctx: unknown, token: { accountId?: string }) => {
      const account = token.accountId === undefined ? undefined : accounts[token.accountId];
      return {
        ...(account?.groups === undefined ? {} : { groups: account.groups }),
        ...(account?.email === undefined ? {} : { email: account.email }),
      };
    },
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
  } as ConstructorParameters<typeof Provider>[1]);
  idp.provider = provider;
  if (options.exchange !== undefined) exchangeGrant(idp, keys, options.exchange.refuse ?? []);
  const callback = provider.callback();
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const path = new URL(req.url ?? '/', issuer).pathname;
    idp.paths.push(path);
    if (path.startsWith('/interaction/')) return void approve(idp, req, res).catch((err: Error) => res.writeHead(500).end(err.message));
    callback(req, res);
  });
  return idp;
}

/** `idp.user` signs in and consents at once to what the client asked: its OpenID scopes, and the resource's. */
async function approve(idp: Idp, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const details = await idp.provider.interactionDetails(req, res);
  const params = details.params as { client_id: string; scope?: string; resource?: string | string[] };
  const asked = (params.scope ?? '').split(' ').filter(Boolean);
  const grant = new idp.provider.Grant({ accountId: idp.user, clientId: params.client_id });
  // Every scope asked is one this provider knows (its `scopes`), granted as asked.
  if (asked.length > 0) grant.addOIDCScope(asked.join(' '));
  const resourceScopes = asked.filter((s) => RESOURCE_SCOPES.includes(s));
  for (const resource of [params.resource ?? []].flat()) grant.addResourceScope(resource, resourceScopes.join(' '));
  idp.granted.push(resourceScopes);
  const grantId = await grant.save();
  await idp.provider.interactionFinished(req, res, { login: { accountId: idp.user }, consent: { grantId } }, { mergeWithLastSubmission: false });
}

/**
 * Token exchange (RFC 8693) as an authorization server does it for a gateway: the client authenticates (oidc-provider
 * checks its Basic credentials), the subject token must be one of this provider's, and the token given is for the
 * `resource` (or `audience`) asked, with the subject's claims and the client as the actor. A subject in `refuse`,
 * or a token that says `no_exchange: true`, is refused (invalid_grant).
 */
function exchangeGrant(idp: Idp, keys: Record<'RS256' | 'ES256', JWK>, refuse: readonly string[]): void {
  const publicKeys = createLocalJWKSet({ keys: Object.values(keys).map(({ d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...key }) => key) });
  const params = ['subject_token', 'subject_token_type', 'resource', 'audience', 'scope'];
  idp.provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx: { oidc: { client: { clientId: string }; params: Record<string, unknown> }; status: number; body: unknown }) => {
      const given = ctx.oidc.params;
      const fail = (error: string, description: string): void => {
        ctx.status = 400;
        ctx.body = { error, error_description: description };
      };
      let subject: string | undefined;
      let claims: Record<string, unknown> = {};
      try {
        ({ payload: claims } = await jwtVerify(String(given.subject_token), publicKeys, { issuer: idp.issuer }));
        subject = String(claims.sub);
      } catch {
        idp.exchanges.push({ client: ctx.oidc.client.clientId, params: given, subject, refused: true });
        return fail('invalid_grant', 'the subject token is not one of this server');
      }
      const refused =
        refuse.includes(subject) || claims.no_exchange === true || given.subject_token_type !== 'urn:ietf:params:oauth:token-type:access_token';
      idp.exchanges.push({ client: ctx.oidc.client.clientId, params: given, subject, refused });
      if (refused) return fail('invalid_grant', `no exchange for ${subject}`);
      const aud = String(given.audience ?? given.resource);
      const { groups, email } = claims;
      const token = await idp.mint({
        sub: subject,
        aud,
        scope: given.scope ?? 'mcp',
        act: { sub: ctx.oidc.client.clientId },
        groups,
        email,
        exp: Math.floor(Date.now() / 1000) + 120,
      });
      ctx.body = { access_token: token, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 120 };
    },
    params,
  );
}
