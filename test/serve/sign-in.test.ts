// serve as an OAuth 2.1 resource server, against a real identity provider (oidc-provider issuing JWT access
// tokens for the resource a client names): discovery from a 401 alone, by the project's client and the MCP SDK's;
// tokens refused for each way they can be wrong; a policy that hides tools and one that asks for more scope;
// sessions bound to the caller that opened them.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { memoryAuthStore } from '../../lib/client/auth/store.js';
import type { ServerConfig } from '../../lib/client/config.js';
import { connect } from '../../lib/client/connect.js';
import type { Connection } from '../../lib/client/connection.js';
import { Policy } from '../../lib/gateway/policy.js';
import { type ServeHandle, type ServeOptions, serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { type Idp, INTROSPECTION_CLIENT, startIdp } from '../helpers/idp.js';
import { browser } from '../helpers/oidc-server.js';
import { within } from '../helpers/poll.js';
import { INIT } from '../helpers/served.js';
import { MCP_HEADERS, rawRequest } from '../helpers/raw-http.js';
import { cli } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';
import { MemoryProvider, REDIRECT } from '../helpers/sdk-oauth.js';

const PEER = (name: string): ServerConfig => ({ command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, name] });

type Json = Record<string, unknown>;

const call = (url: string, token: string | undefined, body: unknown, session?: string) =>
  rawRequest(url, {
    method: 'POST',
    headers: {
      ...MCP_HEADERS,
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(session === undefined ? {} : { 'mcp-session-id': session }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('serve: callers signed in (an OAuth 2.1 resource server)', function () {
  this.timeout(30_000);
  let idp: Idp;
  let g: ServeHandle;
  let log: string[];
  const clients: Connection[] = [];

  beforeEach(async () => {
    idp = await startIdp({ ada: { groups: ['eng'], email: 'ada@example.com' }, bob: { groups: ['sales'] } });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await g?.close();
    await idp.close();
  });

  async function start(servers: Record<string, ServerConfig>, options: ServeOptions = {}): Promise<ServeHandle> {
    log = [];
    g = await serve(servers, { log: (line) => log.push(line), auth: { issuer: idp.issuer, requiredScopes: ['mcp'] }, ...options });
    return g;
  }

  async function signedIn(url: string, protocolVersion = '2025-11-25'): Promise<Connection> {
    const c = await connect(
      { type: 'http', url },
      { protocolVersion, auth: { authorize: browser, redirectUri: REDIRECT, store: memoryAuthStore() } },
    );
    clients.push(c);
    return c;
  }

  it('publishes its protected resource metadata, and answers a request without a token 401 naming it', async () => {
    const served = await start({ a: PEER('a') });
    const origin = new URL(served.url!).origin;
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const meta = await rawRequest(`${origin}${path}`);
      expect(meta.status, path).to.equal(200);
      expect(JSON.parse(meta.body)).to.deep.equal({
        resource: served.url,
        authorization_servers: [idp.issuer],
        scopes_supported: ['mcp'],
        bearer_methods_supported: ['header'],
        dpop_signing_alg_values_supported: ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA'],
      });
    }
    const refused = await call(served.url!, undefined, INIT);
    expect(refused.status).to.equal(401);
    expect(refused.headers['www-authenticate']).to.equal(
      `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
    );
    expect(served.sessions).to.equal(0);
  });

  it('lets the project’s client sign in through discovery alone, in both eras, and the caller is its own', async () => {
    const served = await start({ a: PEER('a'), b: PEER('b') }, { forwardClaims: ['sub', 'email', 'groups'] });
    for (const era of ['2025-11-25', '2026-07-28']) {
      const c = await signedIn(served.url!, era);
      const who = (await c.request('tools/call', { name: 'a__whoami', arguments: {} })) as { content: Array<{ text: string }> };
      expect(JSON.parse(who.content[0]!.text), era).to.deep.equal({ sub: 'ada', email: 'ada@example.com', groups: ['eng'] });
    }
    // The token reaches no server: only the claims asked for.
    expect(log.join('\n')).to.not.match(/eyJ[A-Za-z0-9_-]{10,}/);
  });

  it('lets the MCP SDK’s client sign in through discovery alone', async () => {
    const served = await start({ a: PEER('a') });
    const provider = new MemoryProvider();
    const first = new StreamableHTTPClientTransport(new URL(served.url!), { authProvider: provider });
    await new Client({ name: 'sdk', version: '1' }).connect(first).catch(() => undefined);
    expect(provider.authorizationUrl?.origin).to.equal(idp.issuer);
    const back = new URL(await browser({ url: provider.authorizationUrl!, redirectUri: REDIRECT }));
    await first.finishAuth(back.searchParams.get('code')!);
    const client = new Client({ name: 'sdk', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(served.url!), { authProvider: provider }));
    try {
      expect(await client.callTool({ name: 'echo', arguments: { text: 'signed in ✓' } })).to.deep.include({
        content: [{ type: 'text', text: 'a: signed in ✓' }],
      });
    } finally {
      await client.close();
    }
  });

  it('refuses a token that is wrong in any one way with 401 invalid_token, saying why in the log and never the token', async () => {
    const served = await start({ a: PEER('a') });
    const resource = served.url!;
    const good = await idp.mint({ aud: resource });
    expect((await call(resource, good, INIT)).status).to.equal(200);
    const [h, p, sig] = good.split('.') as [string, string, string];
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString()) as Json;
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${p}.`;
    const cases: Array<[string, string, RegExp]> = [
      ['wrong audience', await idp.mint({ aud: 'https://other.example/mcp' }), /for another resource/],
      ['wrong issuer', await idp.mint({ aud: resource, iss: 'https://evil.example' }), /another issuer/],
      ['expired', await idp.mint({ aud: resource, exp: Math.floor(Date.now() / 1000) - 120 }), /expired/],
      ['alg none', none, /not a valid JWT|algorithm/],
      ['unknown kid', await idp.mint({ aud: resource }, { stranger: true }), /no key of the issuer/],
      ['tampered', `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: 'root' })).toString('base64url')}.${sig}`, /signature does not verify/],
      ['opaque, no introspection', 'opaque-token-value-1234567890', /opaque token/],
    ];
    for (const [what, token, why] of cases) {
      const refused = await call(resource, token, INIT);
      expect(refused.status, what).to.equal(401);
      expect(refused.headers['www-authenticate'], what).to.match(
        /^Bearer resource_metadata="[^"]+", scope="mcp", error="invalid_token", error_description="/,
      );
      expect(log.at(-1), what).to.match(why);
      expect(log.join('\n'), what).to.not.include(token.slice(0, 40));
    }
    // Lacking the scope every call needs: 403, asking for it.
    const narrow = await call(resource, await idp.mint({ aud: resource, scope: 'deploy' }), INIT);
    expect(narrow.status).to.equal(403);
    expect(narrow.headers['www-authenticate']).to.match(/error="insufficient_scope"/);
    expect(narrow.headers['www-authenticate']).to.match(/scope="deploy mcp"/);
  });

  it('refuses a real token the provider issued for another resource', async () => {
    const served = await start({ a: PEER('a') });
    // Signed in to another resource of the same provider, then presented here.
    const store = memoryAuthStore();
    const other = await serve({ b: PEER('b') }, { log: () => undefined, auth: { issuer: idp.issuer, requiredScopes: ['mcp'] } });
    try {
      const c = await connect({ type: 'http', url: other.url! }, { auth: { authorize: browser, redirectUri: REDIRECT, store } });
      await c.close();
      const token = (await store.get(new URL(other.url!).href))!.tokens!.accessToken;
      const refused = await call(served.url!, token, INIT);
      expect(refused.status).to.equal(401);
      expect(log.at(-1)).to.match(/for another resource/);
    } finally {
      await other.close();
    }
  });

  it('checks an opaque token at the introspection endpoint, once while it is live', async () => {
    await idp.close();
    idp = await startIdp({ ada: {} }, { format: 'opaque' });
    const served = await start(
      { a: PEER('a') },
      {
        auth: {
          issuer: idp.issuer,
          requiredScopes: ['mcp'],
          introspection: { endpoint: `${idp.issuer}/token/introspection`, ...INTROSPECTION_CLIENT },
        },
      },
    );
    const c = await signedIn(served.url!);
    for (let i = 0; i < 3; i++)
      expect(await c.request('tools/call', { name: 'echo', arguments: { text: `o${i}` } })).to.deep.equal({
        content: [{ type: 'text', text: `a: o${i}` }],
      });
    expect(idp.paths.filter((p) => p === '/token/introspection')).to.have.length(1);
    const forged = await call(served.url!, 'not-a-token-the-provider-knows', INIT);
    expect(forged.status).to.equal(401);
    expect(log.at(-1)).to.match(/not active/);
  });

  it('binds a session to its caller: another signed-in user gets 404 for it, on every method', async () => {
    const served = await start({ a: PEER('a') });
    const ada = await idp.mint({ aud: served.url!, sub: 'ada' });
    const bob = await idp.mint({ aud: served.url!, sub: 'bob' });
    const init = await call(served.url!, ada, INIT);
    const session = init.headers['mcp-session-id'] as string;
    const echo = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } };
    expect((await call(served.url!, bob, echo, session)).status).to.equal(404);
    const get = await rawRequest(served.url!, {
      method: 'GET',
      headers: { accept: 'text/event-stream', authorization: `Bearer ${bob}`, 'mcp-session-id': session },
    });
    expect(get.status).to.equal(404);
    const del = await rawRequest(served.url!, { method: 'DELETE', headers: { authorization: `Bearer ${bob}`, 'mcp-session-id': session } });
    expect(del.status).to.equal(404);
    expect(served.sessions).to.equal(1);
    const own = await call(served.url!, ada, echo, session);
    expect(own.status).to.equal(200);
    expect(own.body).to.include('a: x');
  });

  it('shows each caller only what the policy allows, and asks for more scope where that would allow a call', async () => {
    const policy = Policy.parse(
      JSON.stringify({
        rules: [
          { tools: ['a__*'], except: ['a__die'], claims: { groups: ['eng'] } },
          { tools: ['b__echo'] },
          { tools: ['b__shared'], scopes: ['admin'] },
        ],
      }),
    );
    const served = await start({ a: PEER('a'), b: PEER('b') }, { policy });
    const names = async (token: string): Promise<string[]> => {
      const init = await call(served.url!, token, INIT);
      const session = init.headers['mcp-session-id'] as string;
      const list = await call(served.url!, token, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, session);
      const all: string[] = [];
      for (const m of list.body.matchAll(/"name":"([^"]+)"/g)) all.push(m[1]!);
      return all;
    };
    const ada = await idp.mint({ aud: served.url!, sub: 'ada', groups: ['eng'] });
    const bob = await idp.mint({ aud: served.url!, sub: 'bob', groups: ['sales'] });
    // One page holds every server's tools: ada's all of a's but a__die, and b__echo; bob's only b__echo (a's are all hidden).
    expect(await names(ada)).to.deep.equal(['a__echo', 'a__shared', 'a__hang', 'a__progress', 'a__ask', 'a__a-only', 'b__echo']);
    expect(await names(bob)).to.deep.equal(['b__echo']);
    // A call outside the caller's claims is an unknown tool; one that more scope would allow is 403, asking for it.
    const init = await call(served.url!, bob, INIT);
    const session = init.headers['mcp-session-id'] as string;
    const hidden = await call(served.url!, bob, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'a__echo', arguments: {} } }, session);
    expect(hidden.status).to.equal(200);
    expect(hidden.body).to.include('Unknown tool: a__echo');
    const stepUp = await call(
      served.url!,
      bob,
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'b__shared', arguments: {} } },
      session,
    );
    expect(stepUp.status).to.equal(403);
    expect(stepUp.headers['www-authenticate']).to.match(/error="insufficient_scope"/);
    expect(stepUp.headers['www-authenticate']).to.match(/scope="mcp admin"/);
    const wider = await idp.mint({ aud: served.url!, sub: 'bob', groups: ['sales'], scope: 'mcp admin' });
    const allowed = await call(
      served.url!,
      wider,
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'b__shared', arguments: { text: 'y' } } },
      session,
    );
    expect(allowed.status).to.equal(200);
    expect(allowed.body).to.include('b: y');
    // Replaced while serving: bob's list changes at once (every tool of both servers, on one page).
    served.setPolicy(Policy.parse(JSON.stringify({ rules: [{ tools: ['*'] }] })));
    expect((await names(bob)).length).to.equal(14);
  });

  it('lets the project’s client step up: a 403 insufficient_scope makes it sign in again for the scope, and the call goes through', async () => {
    const policy = Policy.parse(JSON.stringify({ rules: [{ tools: ['a__echo'] }, { tools: ['a__shared'], scopes: ['admin'] }] }));
    const served = await start({ a: PEER('a'), b: PEER('b') }, { policy });
    idp.user = 'bob';
    const c = await signedIn(served.url!);
    expect(await c.request('tools/call', { name: 'a__echo', arguments: { text: 'first' } })).to.deep.equal({
      content: [{ type: 'text', text: 'a: first' }],
    });
    expect(await c.request('tools/call', { name: 'a__shared', arguments: { text: 'after step-up' } })).to.deep.equal({
      content: [{ type: 'text', text: 'a: after step-up' }],
    });
    expect(idp.granted.at(-1)).to.include('admin');
  });
});

describe('mcp-frame serve --auth-issuer', function () {
  this.timeout(30_000);

  it('lets `mcp-frame call --url` sign in to it through discovery alone, and keeps the tokens for the next call', async () => {
    const idp = await startIdp({ ada: {} });
    const served = await serve({ a: PEER('a') }, { log: () => undefined, auth: { issuer: idp.issuer, requiredScopes: ['mcp'] } });
    try {
      const env = { ...process.env, MCP_FRAME_AUTH_DIR: tempDir('serve-auth-store-') };
      const proc = spawn(process.execPath, [`${ROOT}dist/lib/cli/main.js`, 'call', '--url', served.url!, 'tools/list'], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      proc.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
      const url = await within(10_000, 'the sign-in URL on stderr', async () => /Open this URL to sign in:\s+(\S+)/.exec(stderr)?.[1]);
      const authorization = new URL(url);
      expect(authorization.origin).to.equal(idp.issuer);
      const redirectUri = authorization.searchParams.get('redirect_uri')!;
      // The user's browser: it signs in, and is sent to the command's loopback callback.
      const back = await browser({ url: authorization, redirectUri });
      await (await fetch(back)).body?.cancel();
      expect(await exited, stderr).to.equal(0);
      expect(JSON.parse(stdout).tools.map((t: { name: string }) => t.name)).to.deep.equal(['echo', 'shared']);
      const again = await cli(['call', '--url', served.url!, 'tools/call', '{"name":"echo","arguments":{"text":"kept"}}'], { env });
      expect(again.code, again.stderr).to.equal(0);
      expect(again.stdout).to.include('a: kept');
      expect(again.stderr).to.not.include('Open this URL');
    } finally {
      await served.close();
      await idp.close();
    }
  });

  it('refuses sign-in options that do not go together, and a policy file that is not one, naming the line or rule', async () => {
    const dir = tempDir('serve-auth-');
    const demo = ['--', process.execPath, 'dist/examples/server.js'];
    const both = await cli(['serve', '--auth-issuer', 'https://idp.example', '--token-env', 'X', ...demo], {
      env: { ...process.env, X: 'a-long-enough-token-1234' },
    });
    expect(both.code).to.equal(2);
    expect(both.stderr).to.include('--auth-issuer and --token-env do not go together');
    const alone = await cli(['serve', '--public-url', 'https://mcp.example/mcp', ...demo]);
    expect(alone.code).to.equal(2);
    expect(alone.stderr).to.include('--public-url is for a serve that signs callers in: give --auth-issuer too');
    const secret = await cli([
      'serve',
      '--auth-issuer',
      'https://idp.example',
      '--introspection-endpoint',
      'https://idp.example/introspect',
      ...demo,
    ]);
    expect(secret.code).to.equal(2);
    expect(secret.stderr).to.include('set MCP_FRAME_INTROSPECTION_CLIENT_ID and MCP_FRAME_INTROSPECTION_CLIENT_SECRET');
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{\n  "rules": [\n    { "tools": ["a"] },\n  ]\n}');
    const syntax = await cli(['serve', '--policy', broken, ...demo]);
    expect(syntax.code).to.equal(3);
    expect(syntax.stderr).to.include(`--policy ${broken}: not valid JSON at line 4, column 3`);
    const wrong = join(dir, 'wrong.json');
    writeFileSync(wrong, JSON.stringify({ description: 'a "rules": [ trap', rules: [{ tools: ['a'] }, { tools: ['b'], scope: 'x' }] }, null, 2));
    const shape = await cli(['serve', '--policy', wrong, ...demo]);
    expect(shape.code).to.equal(3);
    expect(shape.stderr).to.include(`--policy ${wrong} line 9: rules[1]: unknown key "scope"`);
  });
});
