// The steps of a sign-in, each called on its own against a small authorization server on 127.0.0.1 (no whole
// sign-in): discovery, registration, the token request and reading its answer.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { authorizationServerMetadata, discover, metadataAt } from '../../lib/client/auth/discovery.js';
import { DpopNonces } from '../../lib/client/auth/dpop.js';
import { type RegisterOptions, registerClient } from '../../lib/client/auth/registration.js';
import { type TokenRequestOptions, tokenRequest, tokensFrom } from '../../lib/client/auth/tokens.js';
import { ConnectionError } from '../../lib/client/errors.js';
import { rejection } from '../helpers/rejection.js';

type Json = Record<string, unknown>;

interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Answers each path with what `routes` gives (a JSON body with 200, or [status, body]); keeps what it was sent. */
async function authServer(
  routes: (base: string) => Record<string, Json | [number, Json]>,
): Promise<{ base: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  let base = '';
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      seen.push({ method: req.method ?? '', path, headers: req.headers, body });
      const route = routes(base)[path];
      if (route === undefined) return void res.writeHead(404).end('not found');
      const [status, json] = Array.isArray(route) ? route : [200, route];
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const signal = new AbortController().signal;

describe('auth steps, each on its own', () => {
  const servers: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  async function start(routes: (base: string) => Record<string, Json | [number, Json]>) {
    const s = await authServer(routes);
    servers.push(s);
    return s;
  }

  it('discovers the resource, then its issuer, from the well-known places (path first), checking each', async () => {
    const as = await start((base) => ({
      '/.well-known/oauth-protected-resource/mcp': {
        resource: `${base}/mcp`,
        authorization_servers: [`${base}/tenant`],
        scopes_supported: ['mcp'],
        dpop_bound_access_tokens_required: true,
      },
      '/.well-known/oauth-authorization-server/tenant': {
        issuer: `${base}/tenant`,
        authorization_endpoint: `${base}/tenant/authorize`,
        token_endpoint: `${base}/tenant/token`,
        registration_endpoint: `${base}/tenant/register`,
      },
    }));
    const found = await discover(new URL(`${as.base}/mcp`), undefined, signal);
    expect(found).to.deep.include({
      resource: `${as.base}/mcp`,
      resourceScopes: ['mcp'],
      issuer: `${as.base}/tenant`,
      tokenEndpoint: `${as.base}/tenant/token`,
      registrationEndpoint: `${as.base}/tenant/register`,
      legacy: false,
      dpopRequired: true,
    });
    expect(as.seen.map((s) => s.path)).to.deep.equal(['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server/tenant']);
    expect(await authorizationServerMetadata(new URL(`${as.base}/tenant`), signal)).to.deep.include({ issuer: `${as.base}/tenant` });
    expect(await metadataAt(new URL(`${as.base}/nothing`), signal)).to.equal(undefined);
  });

  it('refuses metadata for another resource and an issuer that names another, with their codes', async () => {
    const other = await start((base) => ({
      '/.well-known/oauth-protected-resource': { resource: 'https://elsewhere.example/mcp', authorization_servers: [base] },
    }));
    const mismatch = (await rejection(discover(new URL(`${other.base}/mcp`), undefined, signal))) as ConnectionError;
    expect(mismatch).to.be.instanceOf(ConnectionError);
    expect(mismatch.code).to.equal('AUTH_RESOURCE_MISMATCH');
    const liar = await start((base) => ({
      '/.well-known/oauth-protected-resource': { resource: `${base}/mcp`, authorization_servers: [base] },
      '/.well-known/oauth-authorization-server': { issuer: 'https://evil.example' },
    }));
    expect(((await rejection(discover(new URL(`${liar.base}/mcp`), undefined, signal))) as ConnectionError).code).to.equal('AUTH_ISSUER_MISMATCH');
  });

  it('falls back to the 2025-03-26 defaults when the server publishes no metadata', async () => {
    const bare = await start(() => ({}));
    const found = await discover(new URL(`${bare.base}/mcp`), undefined, signal);
    expect(found).to.deep.include({
      legacy: true,
      issuer: bare.base,
      tokenEndpoint: `${bare.base}/token`,
      registrationEndpoint: `${bare.base}/register`,
      resource: undefined,
    });
  });

  it('registers a client (RFC 7591) as the native kind a loopback redirect makes, or takes a metadata document', async () => {
    const as = await start(() => ({
      '/register': [201, { client_id: 'c-1', client_secret: 's3cret-value', token_endpoint_auth_method: 'client_secret_post' }],
    }));
    const found = {
      ...(await discover(new URL(`${as.base}/mcp`), undefined, signal)),
      metadata: { token_endpoint_auth_methods_supported: ['client_secret_post'] },
    };
    const options: RegisterOptions = { server: new URL(`${as.base}/mcp`), scrub: (t) => t };
    const { client, how } = await registerClient(found, 'http://127.0.0.1:5555/callback', options, signal);
    expect(how).to.equal('dynamic');
    expect(client).to.deep.equal({
      clientId: 'c-1',
      authMethod: 'client_secret_post',
      redirectUri: 'http://127.0.0.1:5555/callback',
      issuer: as.base,
      clientSecret: 's3cret-value',
    });
    const sent = JSON.parse(as.seen.at(-1)!.body) as Json;
    expect(sent).to.deep.include({
      application_type: 'native',
      redirect_uris: ['http://127.0.0.1:5555/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
    });
    const byDocument = await registerClient(
      { ...found, metadata: { client_id_metadata_document_supported: true } },
      undefined,
      { ...options, clientMetadataUrl: 'https://app.example/client.json' },
      signal,
    );
    expect(byDocument).to.deep.equal({
      how: 'metadata-document',
      client: { clientId: 'https://app.example/client.json', authMethod: 'none', issuer: as.base },
    });
  });

  it("posts a grant with the client's authentication, and reads the tokens of its answer", async () => {
    const as = await start(() => ({ '/token': { access_token: 'at-1', token_type: 'bearer', expires_in: 60, refresh_token: 'rt-1', scope: 'mcp' } }));
    const options: TokenRequestOptions = {
      issuer: as.base,
      key: undefined,
      nonces: new DpopNonces(),
      given: undefined,
      signal,
      remember: () => undefined,
    };
    const client = { clientId: 'c-1', clientSecret: 'p@ss', authMethod: 'client_secret_basic' as const, issuer: as.base };
    const answer = await tokenRequest(`${as.base}/token`, client, { grant_type: 'client_credentials' }, options);
    const sent = as.seen.at(-1)!;
    expect(sent.headers.authorization).to.equal(`Basic ${Buffer.from('c-1:p%40ss').toString('base64')}`);
    expect(new URLSearchParams(sent.body).get('grant_type')).to.equal('client_credentials');
    const before = Date.now();
    const tokens = tokensFrom(answer, undefined, 'rt-old');
    expect(tokens).to.deep.include({ accessToken: 'at-1', tokenType: 'Bearer', refreshToken: 'rt-1', scope: 'mcp', lifetimeMs: 60_000 });
    expect(tokens.expiresAt).to.be.within(before + 59_000, Date.now() + 60_000);
  });

  it('refuses an answer without an access token, or of a token type this client does not use', () => {
    const answer = (json: Json) => ({ status: 200, json, headers: new Headers() }) as Parameters<typeof tokensFrom>[0];
    expect(() => tokensFrom(answer({ token_type: 'Bearer' }), undefined, undefined)).to.throw(ConnectionError, /without an access_token/);
    expect(() => tokensFrom(answer({ access_token: 'x', token_type: 'mac' }), undefined, undefined)).to.throw(
      ConnectionError,
      /issued a "?mac"? token/,
    );
    // A refresh token the answer did not replace is kept.
    expect(tokensFrom(answer({ access_token: 'x' }), 'a b', 'rt-kept')).to.deep.include({
      refreshToken: 'rt-kept',
      scope: 'a b',
      tokenType: 'Bearer',
    });
  });
});
