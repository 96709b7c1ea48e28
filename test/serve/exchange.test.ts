// Each caller's own credentials to a remote server behind the gateway (RFC 8693 token exchange): a real
// authorization server in the test process (oidc-provider, with the token-exchange grant the test registers), a
// remote upstream (a second serve) that takes only tokens whose audience is its own URL and forwards the caller
// it sees to its server, and several signed-in callers at once.
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import type { Connection } from '../../lib/client/connection.js';
import type { ServerConfig } from '../../lib/client/config.js';
import { type ServeHandle, serve } from '../../lib/serve/index.js';
import { EXCHANGE_CLIENT, type Idp, startIdp } from '../helpers/idp.js';
import { within } from '../helpers/poll.js';
import { MCP_HEADERS, rawRequest } from '../helpers/raw-http.js';
import { rawSession, STEPS } from '../helpers/served.js';

type Json = Record<string, unknown>;

const textOf = (result: unknown): string => ((result as Json).content as Json[])[0]!.text as string;

describe('serve: each caller’s own token to a remote server (token exchange)', function () {
  this.timeout(30_000);
  let idp: Idp;
  const handles: ServeHandle[] = [];
  const clients: Connection[] = [];
  const env = { ...process.env };
  let log: string[] = [];

  beforeEach(async () => {
    idp = await startIdp({ alice: { groups: ['eng'] }, bob: { groups: ['sales'] }, mallory: {} }, { exchange: { refuse: ['mallory'] } });
    process.env.MCP_FRAME_EXCHANGE_CLIENT_ID = EXCHANGE_CLIENT.clientId;
    process.env.MCP_FRAME_EXCHANGE_CLIENT_SECRET = EXCHANGE_CLIENT.clientSecret;
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    for (const h of handles.splice(0).reverse()) await h.close();
    await idp.close();
    process.env = { ...env };
  });

  /** The remote server: it takes tokens for its own URL only, and tells its server who called. */
  async function upstream(): Promise<string> {
    const handle = await serve(STEPS, { auth: { issuer: idp.issuer, requiredScopes: ['mcp'] }, forwardClaims: ['sub', 'act'], log: () => undefined });
    handles.push(handle);
    return handle.url!;
  }

  async function gateway(servers: Record<string, ServerConfig>): Promise<string> {
    log = [];
    const handle = await serve(servers, { auth: { issuer: idp.issuer, requiredScopes: ['mcp'] }, log: (line) => log.push(line) });
    handles.push(handle);
    return handle.url!;
  }

  async function signedIn(url: string, who: string, era = '2025-11-25'): Promise<Connection> {
    const token = await idp.mint({ aud: url, sub: who });
    const c = await connect({ type: 'http', url, headers: { authorization: `Bearer ${token}` } }, { protocolVersion: era });
    clients.push(c);
    return c;
  }

  it('reaches the server with each caller’s exchanged token, never the caller’s own, and keeps it while it holds', async () => {
    const remote = await upstream();
    const url = await gateway({ remote: { type: 'http', url: remote, auth: { mode: 'exchange', scope: 'mcp' } }, local: STEPS });
    const [alice, bob] = await Promise.all([signedIn(url, 'alice'), signedIn(url, 'bob')]);
    const [a, b] = await Promise.all([
      alice.request('tools/call', { name: 'remote__whoami', arguments: {} }),
      bob.request('tools/call', { name: 'remote__whoami', arguments: {} }),
    ]);
    // The remote server saw each caller as itself, the gateway as the actor: tokens for its own URL.
    expect(JSON.parse(textOf(a))).to.deep.equal({ sub: 'alice', act: { sub: EXCHANGE_CLIENT.clientId } });
    expect(JSON.parse(textOf(b))).to.deep.equal({ sub: 'bob', act: { sub: EXCHANGE_CLIENT.clientId } });
    const asked = idp.exchanges.filter((e) => !e.refused);
    expect(asked.map((e) => e.subject).sort()).to.deep.equal(['alice', 'bob']);
    for (const e of asked) {
      expect(e.client).to.equal(EXCHANGE_CLIENT.clientId);
      expect(e.params).to.deep.include({ resource: remote, scope: 'mcp', subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' });
    }
    // Kept while it holds: another call asks for none.
    await alice.request('tools/call', { name: 'remote__whoami', arguments: {} });
    expect(idp.exchanges).to.have.length(2);
    // No token reached the log.
    expect(log.join('\n')).to.not.match(/eyJ[A-Za-z0-9_-]{10,}/);
  });

  it('reaches the isolated and the shared servers beside it from a 2026-07-28 caller’s own gateway, each server seeing that caller’s claims', async () => {
    const remote = await upstream();
    log = [];
    const handle = await serve(
      { remote: { type: 'http', url: remote, auth: { mode: 'exchange' } }, local: STEPS, own: STEPS },
      { auth: { issuer: idp.issuer, requiredScopes: ['mcp'] }, isolate: ['own'], forwardClaims: ['sub'], log: (line) => log.push(line) },
    );
    handles.push(handle);
    const alice = await signedIn(handle.url!, 'alice', '2026-07-28');
    const [viaExchange, isolated, shared] = await Promise.all([
      alice.request('tools/call', { name: 'remote__whoami', arguments: {} }),
      alice.request('tools/call', { name: 'own__whoami', arguments: {} }),
      alice.request('tools/call', { name: 'local__whoami', arguments: {} }),
    ]);
    expect(JSON.parse(textOf(viaExchange))).to.deep.include({ sub: 'alice' });
    // The servers behind the caller's gateway (through the modern gateway) see the caller's claims.
    expect(JSON.parse(textOf(isolated))).to.deep.equal({ sub: 'alice' });
    expect(JSON.parse(textOf(shared))).to.deep.equal({ sub: 'alice' });
  });

  it('fails only that caller’s calls to that server when the exchange is refused, naming it; others go on', async () => {
    const remote = await upstream();
    const url = await gateway({ remote: { type: 'http', url: remote, auth: { mode: 'exchange' } }, local: STEPS });
    const mallory = await signedIn(url, 'mallory');
    const err = (await mallory.request('tools/call', { name: 'remote__whoami', arguments: {} }).catch((e: Error) => e)) as Error;
    expect(err).to.be.instanceOf(Error);
    expect(err.message).to.match(/server "remote"/);
    expect(err.message).to.match(/refused the token exchange \(invalid_grant: no exchange for mallory\)/);
    expect(textOf(await mallory.request('tools/call', { name: 'local__echo', arguments: { text: 'still here' } }))).to.equal('still here');
    // One caller's refusal is no state of the server's: /healthz does not say it is down.
    const health = await rawRequest(url.replace('/mcp', '/healthz'));
    expect(health.status).to.equal(200);
    const servers = (JSON.parse(health.body) as { servers: Record<string, { state: string }> }).servers;
    expect(servers.remote!.state).to.not.equal('down');
    expect(servers.local!.state).to.equal('up');
    const alice = await signedIn(url, 'alice');
    expect(JSON.parse(textOf(await alice.request('tools/call', { name: 'remote__whoami', arguments: {} })))).to.deep.include({ sub: 'alice' });
  });

  it('exchanges the latest token a session’s host presents: a session whose token was refused goes on once the host refreshes it', async () => {
    const remote = await upstream();
    const url = await gateway({ remote: { type: 'http', url: remote, auth: { mode: 'exchange' } }, local: STEPS });
    const stale = await idp.mint({ aud: url, sub: 'alice', no_exchange: true });
    const fresh = await idp.mint({ aud: url, sub: 'alice' });
    const session = await rawSession(url, { authorization: `Bearer ${stale}` });
    const call = (token: string, id: number) =>
      rawRequest(url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, 'mcp-session-id': session },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'remote__whoami', arguments: {} } }),
      });
    expect((await call(stale, 2)).body).to.match(/refused the token exchange \(invalid_grant: no exchange for alice\)/);
    // The same session, the host's refreshed token: the server is reached as alice (after its restart's backoff).
    let id = 3;
    const answered = await within(10_000, 'a call with the refreshed token', async () => {
      const res = await call(fresh, id++);
      return /"sub\\":\\"alice\\"/.test(res.body) ? res.body : undefined;
    });
    expect(answered).to.include('serve-gateway');
  });

  it('refuses at start a server whose auth mode is exchange without sign-in, or without the exchange client', async () => {
    const servers = { remote: { type: 'http' as const, url: 'http://127.0.0.1:9/mcp', auth: { mode: 'exchange' as const } }, local: STEPS };
    const without = (await serve(servers, {}).catch((e: Error) => e)) as Error;
    expect(without.message).to.match(/server "remote" has auth mode "exchange".*--auth-issuer/);
    delete process.env.MCP_FRAME_EXCHANGE_CLIENT_SECRET;
    const noClient = (await serve(servers, { auth: { issuer: idp.issuer } }).catch((e: Error) => e)) as Error;
    expect(noClient.message).to.match(/MCP_FRAME_EXCHANGE_CLIENT_SECRET/);
  });

  it('reaches such a server with each 2026-07-28 caller’s own exchanged token too, through a gateway of each caller’s own', async () => {
    const remote = await upstream();
    const url = await gateway({ remote: { type: 'http', url: remote, auth: { mode: 'exchange' } }, local: STEPS });
    const [alice, bob, mallory] = await Promise.all([
      signedIn(url, 'alice', '2026-07-28'),
      signedIn(url, 'bob', '2026-07-28'),
      signedIn(url, 'mallory', '2026-07-28'),
    ]);
    const [a, b] = await Promise.all([
      alice.request('tools/call', { name: 'remote__whoami', arguments: {} }),
      bob.request('tools/call', { name: 'remote__whoami', arguments: {} }),
    ]);
    expect(JSON.parse(textOf(a))).to.deep.equal({ sub: 'alice', act: { sub: EXCHANGE_CLIENT.clientId } });
    expect(JSON.parse(textOf(b))).to.deep.equal({ sub: 'bob', act: { sub: EXCHANGE_CLIENT.clientId } });
    expect(textOf(await bob.request('tools/call', { name: 'local__echo', arguments: { text: 'modern' } }))).to.equal('modern');
    // A refused exchange fails only that caller's calls to that server.
    const err = (await mallory.request('tools/call', { name: 'remote__whoami', arguments: {} }).catch((e: Error) => e)) as Error;
    expect(err.message).to.match(/server "remote".*refused the token exchange \(invalid_grant: no exchange for mallory\)/);
    expect(textOf(await mallory.request('tools/call', { name: 'local__echo', arguments: { text: 'still here' } }))).to.equal('still here');
    expect(JSON.parse(textOf(await alice.request('tools/call', { name: 'remote__whoami', arguments: {} })))).to.deep.include({ sub: 'alice' });
    // One exchange each (kept while it holds), never the caller's own token passed on.
    expect(
      idp.exchanges
        .filter((e) => !e.refused)
        .map((e) => e.subject)
        .sort(),
    ).to.deep.equal(['alice', 'bob']);
    expect(log.join('\n')).to.not.match(/eyJ[A-Za-z0-9_-]{10,}/);
    // The remote server's listen (for its list changes) is the gateway's own: its acknowledgement reaches no client.
    expect(log.join('\n')).to.not.match(/dropped/);
  });
});
