// connect() with `auth` against a real authorization server on 127.0.0.1 (test/helpers/oauth-server.ts) that
// injects the faults users meet: tokens that expire, get revoked, rotate; clients forgotten; wrong resources and
// issuers; servers that echo tokens, send huge metadata, never finish a sign-in. Each rule of staying signed in
// has a test here that fails without it.
import { expect } from 'chai';
import type { Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { ConnectionError } from '../../lib/client/errors.js';
import { fileAuthStore, memoryAuthStore } from '../../lib/client/auth/store.js';
import type { AuthEvent, AuthOptions, AuthStore } from '../../lib/client/auth/types.js';
import { parseChallenges } from '../../lib/client/auth/wire.js';
import { crossAppAccess } from '../../lib/client/auth/agents.js';
import { hostile, json } from '../helpers/hostile-http.js';
import { headlessAuthorize, type OAuthFaults, OAuthServer } from '../helpers/oauth-server.js';
import { rejection } from '../helpers/rejection.js';
import { tempDir } from '../helpers/temp.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

describe('parseChallenges (WWW-Authenticate)', () => {
  it('reads quoted and bare values, several schemes, escapes and token68', () => {
    const found = parseChallenges(
      'Basic realm="x", Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="read write", error=invalid_token, error_description="say \\"hi\\", twice"',
    );
    expect(found.map((c) => c.scheme)).to.deep.equal(['Basic', 'Bearer']);
    expect(found[1]!.params).to.deep.equal({
      resource_metadata: 'https://a.example/.well-known/oauth-protected-resource/mcp',
      scope: 'read write',
      error: 'invalid_token',
      error_description: 'say "hi", twice',
    });
    expect(parseChallenges('Negotiate abc123==, Bearer')).to.deep.equal([
      { scheme: 'Negotiate', params: { token68: 'abc123==' } },
      { scheme: 'Bearer', params: {} },
    ]);
    expect(parseChallenges(['Bearer scope="a"', 'DPoP algs="ES256"']).map((c) => [c.scheme, c.params])).to.deep.equal([
      ['Bearer', { scope: 'a' }],
      ['DPoP', { algs: 'ES256' }],
    ]);
  });

  it('never throws on malformed headers', () => {
    for (const text of ['', '=', '"', 'Bearer ="', 'Bearer a="unterminated', ',,,', 'Bearer a=b=c, ,=,"x"']) {
      expect(() => parseChallenges(text)).not.to.throw();
    }
  });
});

describe('connect() with auth: signing in and staying signed in', function () {
  this.timeout(20_000);
  let server: OAuthServer;
  const open: Connection[] = [];

  async function start(faults: OAuthFaults = {}): Promise<OAuthServer> {
    server = await OAuthServer.start(faults);
    return server;
  }

  async function signIn(auth: Partial<AuthOptions> = {}, url = server.url): Promise<Connection> {
    const connection = await connect(
      { type: 'http', url },
      { auth: { authorize: headlessAuthorize, redirectUri: REDIRECT, ...auth }, timeoutMs: 10_000 },
    );
    open.push(connection);
    return connection;
  }

  const call = (c: Connection): Promise<unknown> => c.request('tools/call', { name: 'whoami', arguments: {} });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
    await server?.close();
  });

  it('without auth, a 401 fails with AUTH_REQUIRED carrying the parsed challenge', async () => {
    await start({ challengeScope: 'mcp:read' });
    const err = (await rejection(connect({ type: 'http', url: server.url }, { timeoutMs: 5000 }))) as ConnectionError;
    expect(err.code).to.equal('AUTH_REQUIRED');
    expect(err.status).to.equal(401);
    expect(err.challenge?.scheme).to.equal('Bearer');
    expect(err.challenge?.params).to.include({ scope: 'mcp:read', resource_metadata: `${server.origin}/.well-known/oauth-protected-resource/mcp` });
  });

  it('signs in once (discovery once, registration, PKCE, the same resource in both steps) and sends the token on every request', async () => {
    await start();
    const events: AuthEvent[] = [];
    const c = await signIn({ onEvent: (e) => events.push(e) });
    expect(await call(c)).to.deep.include({ content: [{ type: 'text', text: 'scope: ' }] });
    expect(server.counts).to.include({ authorize: 1, register: 1, code: 1, refresh: 0 });
    const paths = server.authServerRequests.map((l) => l.path);
    expect(paths.filter((p) => p === '/.well-known/oauth-protected-resource/mcp')).to.have.length(1);
    expect(paths.filter((p) => p === '/.well-known/oauth-authorization-server')).to.have.length(1);
    expect(server.resources).to.deep.equal([server.url, server.url]);
    // A loopback redirect registers a native client (SEP-837), asking for refresh tokens too.
    const registration = JSON.parse(server.log.find((l) => l.path === '/register')!.body) as Record<string, unknown>;
    expect(registration).to.deep.include({
      application_type: 'native',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
    });
    // Only the first request went without a token; every other one carried it.
    const mcp = server.mcpRequests;
    expect(mcp[0]!.authorization).to.equal(undefined);
    expect(mcp.slice(1).every((l) => l.authorization?.startsWith('Bearer at-'))).to.equal(true);
    // The authorization server's endpoints never see the bearer token.
    expect(server.authServerRequests.filter((l) => l.authorization?.startsWith('Bearer'))).to.deep.equal([]);
    expect(events.map((e) => e.type)).to.deep.equal(['discovered', 'registered', 'authorizing', 'authorized']);
    expect(JSON.stringify(events)).not.to.match(/at-[0-9a-f]{32}|rt-[0-9a-f]{32}/);
  });

  it('refreshes before expiry (60 s early, half way for a token that lives less than 2 min), before the request, so that the server never answers 401', async () => {
    // A 2 s token: refreshed once its first second has passed.
    await start({ accessTtl: 2 });
    const c = await signIn();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const before = server.mcpRequests.length;
    await call(c);
    expect(server.counts.refresh).to.equal(1);
    expect(server.mcpRequests.slice(before).map((l) => l.status)).to.deep.equal([200]);
  });

  it('signs in where the token endpoint reads client_id from the form only (client_secret_basic, as the Python MCP SDK)', async () => {
    await start({ basicClientIdFromForm: true });
    const c = await signIn();
    await call(c);
    const tokenRequests = server.authServerRequests.filter((l) => l.path === '/token');
    expect(tokenRequests.length).to.be.greaterThan(0);
    for (const request of tokenRequests) {
      expect(request.authorization).to.match(/^Basic /);
      expect(new URLSearchParams(request.body).get('client_id')).to.match(/^client-/);
      expect(new URLSearchParams(request.body).get('client_secret')).to.equal(null);
    }
    expect(server.counts.code).to.equal(1);
  });

  it('refreshes once on a 401 (a revoked token) and sends the request again, without a new sign-in', async () => {
    await start();
    const c = await signIn();
    server.revokeAccess();
    await call(c);
    expect(server.counts).to.include({ authorize: 1, refresh: 1 });
  });

  it('saves a rotated refresh token before it is used again: a second process starts from the new one', async () => {
    await start();
    const dir = tempDir('auth-store');
    const first = await signIn({ store: fileAuthStore({ dir }) });
    server.revokeAccess();
    await call(first);
    expect(server.counts.refresh).to.equal(1);
    // Another process, the same store: its first request's token is revoked, and the refresh uses the rotated token.
    server.revokeAccess();
    const second = await signIn({ store: fileAuthStore({ dir }) });
    await call(second);
    expect(server.counts).to.include({ authorize: 1, refresh: 2, refreshReused: 0 });
  });

  it('drops the tokens on invalid_grant and signs in again', async () => {
    await start();
    const store = memoryAuthStore();
    const c = await signIn({ store });
    server.revokeAccess();
    server.revokeRefresh();
    await call(c);
    expect(server.counts).to.include({ authorize: 2, refresh: 1, register: 1 });
    const record = await store.get(new URL(server.url).href);
    expect(record?.tokens?.accessToken).to.match(/^at-/);
  });

  it('keeps the tokens when a refresh gets a 503 or a 429: the failure is reported, no sign-in follows, the next refresh works', async () => {
    await start();
    const store = memoryAuthStore();
    const c = await signIn({ store });
    const key = new URL(server.url).href;
    const refresh = (await store.get(key))!.tokens!.refreshToken!;
    for (const status of [503, 429]) {
      server.faults.refreshStatus = status;
      server.revokeAccess();
      const err = await rejection<ConnectionError>(call(c));
      expect(err.code).to.equal('AUTH_UNAVAILABLE');
      expect(err.status).to.equal(status);
      expect(err.message).to.match(/could not refresh the tokens now/);
      expect((await store.get(key))!.tokens!.refreshToken).to.equal(refresh);
    }
    expect(server.counts.authorize).to.equal(1);
    server.faults.refreshStatus = undefined;
    await call(c);
    // The kept refresh token still works (the session's GET stream may have tried one refresh more meanwhile).
    expect(server.counts).to.include({ authorize: 1, refreshReused: 0 });
    expect(server.counts.refresh).to.be.at.least(3);
    expect((await store.get(key))!.tokens!.refreshToken).not.to.equal(refresh);
  });

  it('signs in again when the token endpoint answers a refresh 400 or 401 with no invalid_grant (a revoked token, as the MCP SDK example says it)', async () => {
    await start();
    const store = memoryAuthStore();
    const c = await signIn({ store });
    const key = new URL(server.url).href;
    for (const [i, answer] of [
      { status: 400, body: { error: 'server_error', error_description: 'Internal Server Error' } },
      { status: 401, body: {} },
    ].entries()) {
      const before = (await store.get(key))!.tokens!.accessToken;
      server.faults.refreshAnswer = answer;
      server.revokeAccess();
      await call(c);
      server.faults.refreshAnswer = undefined;
      expect(server.counts.authorize, `a sign-in after HTTP ${answer.status}`).to.equal(2 + i);
      expect((await store.get(key))!.tokens!.accessToken).to.not.equal(before);
    }
  });

  it('registers again on invalid_client (the server forgot the client)', async () => {
    await start();
    const c = await signIn();
    server.forgetClients();
    server.revokeAccess();
    await call(c);
    expect(server.counts).to.include({ register: 2, authorize: 2 });
  });

  it('signs in once for requests sent together, and refreshes once for them', async () => {
    await start();
    const c = await signIn();
    server.revokeAccess();
    await Promise.all([call(c), call(c), call(c), c.request('tools/list')]);
    expect(server.counts).to.include({ authorize: 1, refresh: 1, refreshReused: 0 });
  });

  it('two connections sharing a file store (as two bridges do) open one sign-in and spend a refresh token once', async () => {
    await start();
    const dir = tempDir('auth-store');
    let authorizations = 0;
    const slowAgent = async (req: { url: URL }): Promise<string> => {
      authorizations++;
      await new Promise((resolve) => setTimeout(resolve, 200));
      return headlessAuthorize(req);
    };
    const [a, b] = await Promise.all([
      signIn({ store: fileAuthStore({ dir }), authorize: slowAgent }),
      signIn({ store: fileAuthStore({ dir }), authorize: slowAgent }),
    ]);
    expect(authorizations).to.equal(1);
    server.revokeAccess();
    await Promise.all([call(a!), call(b!)]);
    expect(server.counts).to.include({ authorize: 1, refresh: 1, refreshReused: 0 });
  });

  it('steps up on 403 insufficient_scope, asking for the union of the scopes', async () => {
    await start({ challengeScope: 'mcp:read', requiredScope: 'mcp:write' });
    const c = await signIn();
    const text = ((await call(c)) as { content: Array<{ text: string }> }).content[0]!.text;
    expect(text.replace('scope: ', '').split(' ').sort()).to.deep.equal(['mcp:read', 'mcp:write']);
    const asked = server.log.filter((l) => l.path === '/authorize').map((l) => l.path);
    expect(asked).to.have.length(2);
  });

  it('stops after 3 sign-ins for one request with AUTH_SCOPE_LOOP', async () => {
    await start({ requiredScope: 'admin', stripScope: true });
    const err = (await rejection(signIn())) as ConnectionError;
    expect(err.code).to.equal('AUTH_SCOPE_LOOP');
    expect(server.counts.authorize).to.equal(3);
  });

  it('signs in at most 6 times a minute', async () => {
    await start();
    const c = await signIn();
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) {
      server.revokeAccess();
      server.revokeRefresh();
      await call(c).then(
        () => codes.push('ok'),
        (err: ConnectionError) => codes.push(err.code),
      );
    }
    expect(codes).to.deep.equal(['ok', 'ok', 'ok', 'ok', 'ok', 'AUTH_SCOPE_LOOP']);
    expect(server.counts.authorize).to.equal(6);
  });

  it('refuses a resource that is not the server before authorizing (AUTH_RESOURCE_MISMATCH)', async () => {
    await start({ resource: 'http://127.0.0.1:1/mcp' });
    const err = (await rejection(signIn())) as ConnectionError;
    expect(err.code).to.equal('AUTH_RESOURCE_MISMATCH');
    expect(server.counts.authorize).to.equal(0);
  });

  it('refuses metadata that names another issuer (AUTH_ISSUER_MISMATCH), and a redirect from another one (RFC 9207)', async () => {
    await start({ issuer: 'http://evil.example' });
    expect(((await rejection(signIn())) as ConnectionError).code).to.equal('AUTH_ISSUER_MISMATCH');
    expect(server.counts.authorize).to.equal(0);
    await server.close();
    await start({ iss: 'wrong' });
    expect(((await rejection(signIn())) as ConnectionError).code).to.equal('AUTH_ISSUER_MISMATCH');
    expect(server.counts.code).to.equal(0);
    await server.close();
    await start({ iss: 'right' });
    await signIn();
  });

  it('refuses an authorization server that does not list PKCE S256', async () => {
    await start({ noPkce: true });
    const err = (await rejection(signIn())) as ConnectionError;
    expect(err.code).to.equal('AUTH_DENIED');
    expect(err.message).to.include('S256');
    expect(server.counts.authorize).to.equal(0);
  });

  it('fails with AUTH_DENIED on an error redirect and on a redirect with another state, and never exchanges a code', async () => {
    await start({ deny: 'access_denied' });
    const denied = (await rejection(signIn())) as ConnectionError;
    expect([denied.code, denied.message]).to.satisfy(([code, message]: string[]) => code === 'AUTH_DENIED' && message!.includes('access_denied'));
    server.faults = {};
    const forged = async (req: { url: URL }): Promise<string> => {
      const back = new URL(await headlessAuthorize(req));
      back.searchParams.set('state', 'forged');
      return back.href;
    };
    expect(((await rejection(signIn({ authorize: forged }))) as ConnectionError).code).to.equal('AUTH_DENIED');
    expect(server.counts.code).to.equal(0);
  });

  it('keeps tokens out of errors: a server that echoes the token gets it replaced by [REDACTED]', async () => {
    await start({ echoToken: true });
    const c = await signIn();
    const err = (await rejection(call(c))) as Error;
    expect(err.message).to.include('[REDACTED]');
    expect(err.message).not.to.match(/at-[0-9a-f]{32}/);
  });

  it('keeps the refresh token out of a refused refresh that echoes it', async () => {
    await start({ echoRefresh: true });
    const store = memoryAuthStore();
    const events: AuthEvent[] = [];
    const c = await signIn({ store, onEvent: (e) => events.push(e), authorize: headlessAuthorize });
    const refresh = (await store.get(new URL(server.url).href))!.tokens!.refreshToken!;
    server.revokeAccess();
    server.revokeRefresh();
    // The refresh fails (its text echoes the token), and a new sign-in follows; no text carries the token.
    await call(c);
    const failed = events.filter((e) => e.type === 'failed') as Array<{ message: string }>;
    expect(failed.length).to.be.greaterThan(0);
    for (const e of failed) {
      expect(e.message).not.to.include(refresh);
      expect(e.message).to.include('[REDACTED]');
    }
  });

  it('never sends the token elsewhere: a request is not followed to another origin', async () => {
    await start();
    const c = await signIn();
    const elsewhere = await OAuthServer.start();
    try {
      server.faults = { redirectTo: elsewhere.url };
      await rejection(call(c));
      expect(elsewhere.log).to.deep.equal([]);
    } finally {
      await elsewhere.close();
    }
  });

  it('bounds metadata size: a 1 MiB document fails the sign-in instead of being read', async () => {
    await start({ metadataBytes: 1024 * 1024 });
    const err = (await rejection(signIn())) as ConnectionError;
    expect(err.code).to.equal('AUTH_TOKEN');
    expect(err.message).to.include('larger than');
  });

  it('bounds the sign-in in time (AUTH_TIMEOUT), and time spent signing in does not count against timeoutMs', async () => {
    await start();
    const never = (): Promise<string> => new Promise(() => undefined);
    const started = Date.now();
    const err = (await rejection(signIn({ authorize: never, authorizeTimeoutMs: 300 }))) as ConnectionError;
    expect(err.code).to.equal('AUTH_TIMEOUT');
    expect(Date.now() - started).to.be.lessThan(5000);
    const slow = async (req: { url: URL }): Promise<string> => {
      await new Promise((resolve) => setTimeout(resolve, 700));
      return headlessAuthorize(req);
    };
    const c = await connect({ type: 'http', url: server.url }, { auth: { authorize: slow, redirectUri: REDIRECT }, timeoutMs: 300 });
    open.push(c);
    await call(c);
  });

  it('refuses authorizeParams that would change the flow', async () => {
    await start();
    const err = await rejection(signIn({ authorizeParams: { state: 'x' } }));
    expect(err).to.be.instanceOf(TypeError);
    expect((err as Error).message).to.include('"state"');
  });

  it('pins the resource indicator, or leaves it out, as asked', async () => {
    await start();
    await signIn({ resource: false });
    expect(server.resources).to.deep.equal([undefined, undefined]);
  });

  it('signs in on the deprecated HTTP+SSE transport too: its stream and every POST carry the token', async () => {
    await start();
    // The resource is the whole origin, which /sse is part of.
    server.faults.resource = server.origin;
    const c = await connect(
      { type: 'sse', url: `${server.origin}/sse` },
      { auth: { authorize: headlessAuthorize, redirectUri: REDIRECT }, timeoutMs: 10_000 },
    );
    open.push(c);
    expect(await call(c)).to.deep.include({ content: [{ type: 'text', text: 'scope: ' }] });
    expect(server.counts.authorize).to.equal(1);
    const mcp = server.mcpRequests;
    expect(mcp[0]).to.deep.include({ path: '/sse', authorization: undefined, status: 401 });
    expect(mcp.slice(1).every((l) => l.authorization?.startsWith('Bearer at-'))).to.equal(true);
    expect(mcp.filter((l) => l.path === '/messages').length).to.be.at.least(3);
  });

  it('uses a stored token from an earlier run without signing in', async () => {
    await start();
    const store: AuthStore = memoryAuthStore();
    await (await signIn({ store })).close();
    const before = server.counts.authorize;
    const again = await signIn({ store, authorize: () => Promise.reject(new Error('no browser should open')) });
    await call(again);
    expect(server.counts.authorize).to.equal(before);
    expect(server.mcpRequests.at(-1)?.status).to.equal(200);
  });

  /** An MCP server that asks for a token, naming protected resource metadata of `prm`'s making, and an authorization server of `as`'s. */
  async function protectedBy(prm: (base: string) => Record<string, unknown>, as: (base: string) => Record<string, unknown> = () => ({})) {
    const logged: string[] = [];
    const server = await hostile((req, res, body) => {
      logged.push(`${req.method} ${req.url}`);
      const base = `http://127.0.0.1:${(req.socket.address() as { port: number }).port}`;
      if (req.url === '/.well-known/oauth-protected-resource/mcp' || req.url === '/.well-known/oauth-protected-resource')
        return json(res, { resource: `${base}/mcp`, ...prm(base) });
      if (req.url === '/.well-known/oauth-authorization-server') {
        return json(res, {
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          registration_endpoint: `${base}/register`,
          code_challenge_methods_supported: ['S256'],
          ...as(base),
        });
      }
      if (req.url === '/idp/token') {
        const form = new URLSearchParams(body);
        return void res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: 'invalid_grant', error_description: `cannot use ${form.get('subject_token')}` }));
      }
      res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"` }).end();
    });
    return { ...server, logged };
  }

  it('requires https for authorization-server endpoints outside loopback, and asks them nothing over plain http', async () => {
    const cases = [
      {
        prm: () => ({ authorization_servers: ['http://as.example.com'] }),
        as: () => ({}),
        what: /authorization server .*as\.example\.com.* is not https/,
      },
      {
        prm: (b: string) => ({ authorization_servers: [b] }),
        as: () => ({ token_endpoint: 'http://as.example.com/token' }),
        what: /token_endpoint .* plain http on another host/,
      },
      {
        prm: (b: string) => ({ authorization_servers: [b] }),
        as: () => ({ authorization_endpoint: 'http://as.example.com/authorize' }),
        what: /authorization_endpoint .* plain http/,
      },
      {
        prm: (b: string) => ({ authorization_servers: [b] }),
        as: () => ({ registration_endpoint: 'http://as.example.com/register' }),
        what: /registration_endpoint .* plain http/,
      },
    ];
    for (const { prm, as, what } of cases) {
      const server = await protectedBy(prm, as);
      try {
        const err = await rejection<ConnectionError>(
          connect({ type: 'http', url: `${server.url}/mcp` }, { auth: { authorize: headlessAuthorize, redirectUri: REDIRECT }, timeoutMs: 5000 }),
        );
        expect(err.code).to.equal('AUTH_REQUIRED');
        expect(err.message).to.match(what);
        expect(server.logged.filter((l) => /register|token|authorize/.test(l))).to.deep.equal([]);
      } finally {
        await server.close();
      }
    }
  });

  it("keeps cross-app access's ID token out of the error when the identity provider echoes it", async () => {
    const server = await protectedBy((b) => ({ authorization_servers: [b] }));
    const idToken = `eyJhbGciOiJSUzI1NiJ9.${'i'.repeat(40)}.sig-of-the-id-token`;
    const events: AuthEvent[] = [];
    try {
      const err = await rejection<ConnectionError>(
        connect(
          { type: 'http', url: `${server.url}/mcp` },
          {
            auth: {
              grant: crossAppAccess({ idpTokenEndpoint: `${server.url}/idp/token`, idToken }),
              client: { clientId: 'app', clientSecret: 'app-secret-value' },
              onEvent: (e) => events.push(e),
            },
            timeoutMs: 5000,
          },
        ),
      );
      expect(err.code).to.equal('AUTH_TOKEN');
      expect(err.message).to.include('[REDACTED]');
      expect(err.message).not.to.include(idToken);
      expect(JSON.stringify(events)).not.to.include(idToken);
    } finally {
      await server.close();
    }
  });
});
