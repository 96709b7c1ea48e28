// The steps of a sign-in, each called on its own against a small authorization server on 127.0.0.1 (no whole
// sign-in): discovery, registration, the token request and reading its answer.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { authorizationServerMetadata, discover, metadataAt } from '../../lib/client/auth/discovery.js';
import { DpopNonces } from '../../lib/client/auth/dpop.js';
import { authorizationUrl, codeOf, deviceAuthorization, deviceFlowOffered, pollDeviceToken } from '../../lib/client/auth/grants.js';
import { clientOf, type RegisterOptions, registerClient } from '../../lib/client/auth/registration.js';
import { dpopKeyOf, refreshRefused, scopeFor, type TokenRequestOptions, tokenRequest, tokensFrom } from '../../lib/client/auth/tokens.js';
import type { Discovery } from '../../lib/client/auth/discovery.js';
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
    const answer = (json: Json): Parameters<typeof tokensFrom>[0] => ({ status: 200, json, text: JSON.stringify(json), headers: new Headers() });
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

  const FOUND: Discovery = {
    resource: 'https://mcp.example/mcp',
    resourceScopes: ['read', 'write'],
    issuer: 'https://id.example',
    metadata: { scopes_supported: ['read', 'offline_access'], authorization_response_iss_parameter_supported: true },
    authorizationEndpoint: 'https://id.example/authorize?tenant=1',
    tokenEndpoint: 'https://id.example/token',
    registrationEndpoint: undefined,
    legacy: false,
    dpopRequired: false,
  };
  const answer = (status: number, json: Json): Parameters<typeof tokensFrom>[0] => ({
    status,
    json,
    text: JSON.stringify(json),
    headers: new Headers(),
  });

  it("builds the authorization URL with PKCE S256, and takes a redirect's code only when it is this sign-in's", () => {
    const url = authorizationUrl(FOUND, {
      clientId: 'c-1',
      redirectUri: 'http://127.0.0.1:5555/callback',
      challenge: 'ch',
      state: 'st',
      scope: 'read offline_access',
      resource: FOUND.resource,
      extra: { login_hint: 'ada' },
    });
    expect(Object.fromEntries(url.searchParams)).to.deep.equal({
      tenant: '1',
      response_type: 'code',
      client_id: 'c-1',
      redirect_uri: 'http://127.0.0.1:5555/callback',
      code_challenge: 'ch',
      code_challenge_method: 'S256',
      state: 'st',
      scope: 'read offline_access',
      resource: 'https://mcp.example/mcp',
      prompt: 'consent',
      login_hint: 'ada',
    });
    const back = (query: string): URL => new URL(`http://127.0.0.1:5555/callback?${query}`);
    expect(codeOf(back('code=abc&state=st&iss=https%3A%2F%2Fid.example'), 'st', FOUND, undefined)).to.equal('abc');
    expect(() => codeOf(back('code=abc&state=other&iss=https%3A%2F%2Fid.example'), 'st', FOUND, undefined)).to.throw(/another state/);
    expect(() => codeOf(back('code=abc&state=st'), 'st', FOUND, undefined), 'the issuer is required here').to.throw(/RFC 9207/);
    expect(() => codeOf(back('code=abc&state=st&iss=https%3A%2F%2Fid.example%2F'), 'st', FOUND, undefined), 'compared exactly').to.throw(/RFC 9207/);
    expect(() => codeOf(back('error=invalid_target&state=st&iss=https%3A%2F%2Fid.example'), 'st', FOUND, 'r')).to.throw(
      /invalid_target.*auth\.resource: false/,
    );
    expect(() => codeOf(back('state=st&iss=https%3A%2F%2Fid.example'), 'st', FOUND, undefined)).to.throw(/no authorization code/);
  });

  it('reads a device authorization, and polls for its token, slowing down when told', async function () {
    this.timeout(20_000);
    const device = deviceAuthorization(
      answer(200, { device_code: 'dc', user_code: 'ABCD', verification_uri: 'https://id.example/device', interval: 1 }),
      undefined,
      (t) => t,
    );
    expect(device).to.deep.equal({
      deviceCode: 'dc',
      intervalS: 1,
      prompt: { verificationUri: 'https://id.example/device', userCode: 'ABCD', expiresInS: 600 },
    });
    expect(() => deviceAuthorization(answer(400, { error: 'invalid_client' }), undefined, (t) => t)).to.throw(
      ConnectionError,
      /device authorization endpoint refused/,
    );
    const sent: Array<{ at: number; body: Json }> = [];
    const answers = [answer(400, { error: 'authorization_pending' }), answer(400, { error: 'slow_down' }), answer(200, { access_token: 'at' })];
    const began = Date.now();
    const done = await pollDeviceToken(
      async (body) => {
        sent.push({ at: Date.now() - began, body });
        return answers.shift()!;
      },
      { device, resource: 'https://mcp.example/mcp', limitMs: 15_000, signal, scrub: (t) => t },
    );
    expect(done.json).to.deep.equal({ access_token: 'at' });
    expect(sent.map((s) => s.body)[0]).to.deep.equal({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: 'dc',
      resource: 'https://mcp.example/mcp',
    });
    // 1 s, 1 s, then 6 s after slow_down.
    expect(sent[2]!.at - sent[1]!.at).to.be.at.least(5900);
    expect(deviceFlowOffered(FOUND, undefined)).to.equal(false);
    expect(
      deviceFlowOffered(
        { ...FOUND, metadata: { device_authorization_endpoint: 'https://id.example/device' } },
        { when: 'offered', prompt: () => undefined },
      ),
    ).to.equal(true);
    expect(deviceFlowOffered(FOUND, { when: 'offered', prompt: () => undefined }), 'offered only: none here').to.equal(false);
    expect(() => deviceFlowOffered(FOUND, { prompt: () => undefined, when: 'always' })).to.throw(/offers no device authorization grant/);
  });

  it('asks the scope pinned, else the challenge’s, else the resource’s, with offline_access when the server lists it', () => {
    const challenge = { scheme: 'Bearer', params: { scope: 'admin' } };
    expect(scopeFor({}, undefined, FOUND, undefined)).to.equal('read write offline_access');
    expect(scopeFor({}, challenge, FOUND, undefined)).to.equal('admin offline_access');
    expect(scopeFor({ scope: 'mine', offlineAccess: false }, challenge, FOUND, undefined)).to.equal('mine');
    expect(scopeFor({ offlineAccess: false }, challenge, FOUND, new Set(['read']))).to.equal('admin read');
    expect(scopeFor({}, undefined, { ...FOUND, resourceScopes: undefined, metadata: undefined }, undefined)).to.equal(undefined);
  });

  it('binds tokens with DPoP only where the authorization server can, and refuses when the resource requires it', () => {
    const server = new URL('https://mcp.example/mcp');
    expect(dpopKeyOf(FOUND, false, server, undefined)).to.equal(undefined);
    expect(() => dpopKeyOf(FOUND, true, server, undefined)).to.throw(ConnectionError, /takes only DPoP-bound tokens/);
    const key = dpopKeyOf({ ...FOUND, metadata: { dpop_signing_alg_values_supported: ['ES256'] } }, false, server, undefined);
    expect(key?.proof('POST', 'https://id.example/token')).to.match(/^ey[\w-]+\.ey[\w-]+\.[\w-]+$/);
  });

  it('tells a dead refresh token from a server that cannot answer now, and the client given from the one registered', () => {
    expect(refreshRefused(answer(400, { error: 'invalid_grant' }), (t) => t).code).to.equal('AUTH_TOKEN');
    expect(refreshRefused(answer(401, {}), (t) => t).code).to.equal('AUTH_TOKEN');
    const later = refreshRefused(answer(503, { error: 'temporarily_unavailable' }), (t) => t);
    expect([later.code, later.status]).to.deep.equal(['AUTH_UNAVAILABLE', 503]);
    const registered = { clientId: 'reg', authMethod: 'none' as const, issuer: 'https://id.example' };
    expect(clientOf(undefined, { resource: 'r', client: registered })).to.equal(registered);
    expect(clientOf({ clientId: 'given', clientSecret: 's' }, { resource: 'r', issuer: 'https://id.example', client: registered })).to.deep.equal({
      clientId: 'given',
      clientSecret: 's',
      authMethod: 'client_secret_basic',
      issuer: 'https://id.example',
    });
  });
});
