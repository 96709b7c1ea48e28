// Signing in to an MCP server behind a real authorization server: oidc-provider (dynamic registration, PKCE
// required, refresh-token rotation, resource indicators, OpenID configuration only), on 127.0.0.1.
import { expect } from 'chai';
import type { Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import { memoryAuthStore } from '../../lib/client/auth/store.js';
import type { ConnectionError } from '../../lib/client/errors.js';
import type { DevicePrompt } from '../../lib/client/auth/types.js';
import { rejection } from '../helpers/rejection.js';
import { browser, deviceBrowser, type OidcServer, startOidc } from '../helpers/oidc-server.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

describe('connect() with auth against oidc-provider', function () {
  this.timeout(20_000);
  let oidc: OidcServer;
  const open: Connection[] = [];

  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
    await oidc.close();
  });

  it('registers, signs in with PKCE and a resource indicator, and calls a tool with a token for that resource', async () => {
    oidc = await startOidc();
    const c = await connect({ type: 'http', url: oidc.url }, { auth: { authorize: browser, redirectUri: REDIRECT } });
    open.push(c);
    const result = (await c.request('tools/call', { name: 'whoami', arguments: {} })) as { content: Array<{ text: string }> };
    expect(result.content[0]!.text).to.equal('user: user-1, scope: mcp:tools');
    expect(oidc.counts).to.include({ authorizations: 1, authorization_code: 1 });
  });

  it('finds the metadata of an issuer with a path (Keycloak-style) by the path-appended OpenID form, after the path-insertion ones', async () => {
    oidc = await startOidc({ issuerPath: '/realms/team' });
    const c = await connect({ type: 'http', url: oidc.url }, { auth: { authorize: browser, redirectUri: REDIRECT } });
    open.push(c);
    const result = (await c.request('tools/call', { name: 'whoami', arguments: {} })) as { content: Array<{ text: string }> };
    expect(result.content[0]!.text).to.equal('user: user-1, scope: mcp:tools');
    const wellKnown = oidc.paths.filter((p) => p.includes('/.well-known/') && !p.includes('oauth-protected-resource'));
    expect(wellKnown).to.deep.equal([
      '/.well-known/oauth-authorization-server/realms/team',
      '/.well-known/openid-configuration/realms/team',
      '/realms/team/.well-known/openid-configuration',
    ]);
  });

  it('signs in with the device authorization grant when it is offered: the code shown, the token endpoint polled, no browser redirect', async () => {
    oidc = await startOidc({ device: true });
    const shown: DevicePrompt[] = [];
    const c = await connect(
      { type: 'http', url: oidc.url },
      {
        auth: {
          authorize: () => Promise.reject(new Error('the browser flow was taken')),
          redirectUri: REDIRECT,
          device: {
            when: 'offered',
            prompt: (p) => {
              shown.push(p);
              void deviceBrowser(p.verificationUriComplete!);
            },
          },
        },
      },
    );
    open.push(c);
    const result = (await c.request('tools/call', { name: 'whoami', arguments: {} })) as { content: Array<{ text: string }> };
    expect(result.content[0]!.text).to.equal('user: user-1, scope: mcp:tools');
    expect(shown).to.have.length(1);
    expect(shown[0]!.userCode).to.match(/^[A-Z]{4}-?[A-Z]{4}$/);
    expect(shown[0]!.verificationUri).to.equal(`${oidc.issuer}/device`);
    expect(oidc.counts.authorizations).to.equal(1);
    expect(oidc.paths.filter((p) => p === '/auth')).to.deep.equal([]);
  });

  it('fails a sign-in that asks for the device grant always where the server does not offer it, naming RFC 8628', async () => {
    oidc = await startOidc();
    const err = await rejection<ConnectionError>(
      connect(
        { type: 'http', url: oidc.url },
        { auth: { authorize: browser, redirectUri: REDIRECT, device: { when: 'always', prompt: () => undefined } } },
      ),
    );
    expect(err.code).to.equal('AUTH_REQUIRED');
    expect(err.message).to.include('offers no device authorization grant (RFC 8628)');
  });

  it('refreshes with a rotated refresh token when the access token is revoked, and the spent one stays spent', async () => {
    oidc = await startOidc();
    const store = memoryAuthStore();
    const c = await connect({ type: 'http', url: oidc.url }, { auth: { authorize: browser, redirectUri: REDIRECT, store } });
    open.push(c);
    const key = new URL(oidc.url).href;
    const first = (await store.get(key))!.tokens!;
    expect(first.refreshToken).to.be.a('string');
    // Revoked on the server's side: the next request gets 401, refreshes, and goes through.
    await (await oidc.provider.AccessToken.find(first.accessToken))!.destroy();
    await c.request('tools/call', { name: 'whoami', arguments: {} });
    const second = (await store.get(key))!.tokens!;
    expect(second.refreshToken).to.be.a('string').and.not.equal(first.refreshToken);
    expect(oidc.counts).to.include({ authorizations: 1, refresh_token: 1, refreshRefused: 0 });
    // The rotated-out refresh token is spent at the provider: using it again is refused.
    const clientId = (await store.get(key))!.client!.clientId;
    const reuse = await fetch(`${oidc.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first.refreshToken!, client_id: clientId }).toString(),
    });
    expect(reuse.status).to.equal(400);
    expect(((await reuse.json()) as { error: string }).error).to.equal('invalid_grant');
  });

  it('refreshes a short-lived token half way through its life, not before every request, never drawing a 401 after signing in', async () => {
    oidc = await startOidc({ accessTtl: 4 });
    const asked: URL[] = [];
    const c = await connect(
      { type: 'http', url: oidc.url },
      {
        auth: {
          authorize: (request) => {
            asked.push(request.url);
            return browser(request);
          },
          redirectUri: REDIRECT,
        },
      },
    );
    open.push(c);
    // offline_access was asked with prompt=consent, as OpenID Connect Core §11 wants (else it is dropped).
    expect(asked[0]!.searchParams.get('scope')!.split(' ')).to.include('offline_access');
    expect(asked[0]!.searchParams.get('prompt')).to.equal('consent');
    for (let i = 0; i < 3; i++) await c.request('tools/call', { name: 'whoami', arguments: {} });
    expect(oidc.counts.refresh_token).to.equal(0);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    await c.request('tools/list');
    await c.request('tools/list');
    expect(oidc.counts.authorizations).to.equal(1);
    expect(oidc.counts.refresh_token).to.equal(1);
    expect(oidc.counts.refreshRefused).to.equal(0);
    // Only the very first request, before any token, was refused.
    expect(oidc.counts.unauthorized).to.equal(1);
  });

  it('signs in for DPoP-bound tokens when the server takes only those: a proof per request, both nonces honoured, refresh proven too', async () => {
    oidc = await startOidc({ dpop: true, accessTtl: 2 });
    const store = memoryAuthStore();
    const c = await connect({ type: 'http', url: oidc.url }, { auth: { authorize: browser, redirectUri: REDIRECT, store } });
    open.push(c);
    const result = (await c.request('tools/call', { name: 'whoami', arguments: {} })) as { content: Array<{ text: string }> };
    expect(result.content[0]!.text).to.equal('user: user-1, scope: mcp:tools');
    // Half way through the 2 s token's life: the next request refreshes first.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await c.request('tools/list');
    const record = (await store.get(new URL(oidc.url).href))!;
    expect(record.tokens!.tokenType).to.equal('DPoP');
    // The key is kept with the tokens, the private half a secret of the store like the refresh token.
    expect(record.dpopKey).to.include.keys('d', 'x', 'y');
    // oidc-provider bound the token to the key (cnf.jkt) and wanted its nonce: it issued the token, so it was given.
    const token = await oidc.provider.AccessToken.find(record.tokens!.accessToken);
    expect((token as unknown as { jkt?: string }).jkt).to.be.a('string');
    // The MCP endpoint asked for its nonce once, then took a fresh proof on every request.
    expect(oidc.proofs.nonceChallenges).to.equal(1);
    expect(oidc.proofs.refused).to.deep.equal([]);
    expect(oidc.proofs.accepted.length).to.be.at.least(2);
    expect(new Set(oidc.proofs.accepted).size).to.equal(oidc.proofs.accepted.length);
    // The short-lived token is refreshed before it expires: the refresh carries a proof with the same key.
    expect(oidc.counts.refresh_token).to.be.at.least(1);
    expect(oidc.counts.refreshRefused).to.equal(0);
    const refreshed = await oidc.provider.AccessToken.find((await store.get(new URL(oidc.url).href))!.tokens!.accessToken);
    expect((refreshed as unknown as { jkt?: string }).jkt).to.equal((token as unknown as { jkt?: string }).jkt);
  });

  it('sends no proof and gets bearer tokens with dpop: false, even from a provider that can bind them', async () => {
    oidc = await startOidc({ dpop: true });
    const store = memoryAuthStore();
    // The MCP endpoint takes only DPoP: a bearer token is refused, and the client says so.
    const err = await rejection<ConnectionError>(
      connect({ type: 'http', url: oidc.url }, { auth: { authorize: browser, redirectUri: REDIRECT, store, dpop: false } }),
    );
    expect(err.code).to.equal('AUTH_SCOPE_LOOP');
    expect((await store.get(new URL(oidc.url).href))?.tokens?.tokenType).to.equal('Bearer');
    expect(oidc.proofs.accepted).to.deep.equal([]);
  });
});
