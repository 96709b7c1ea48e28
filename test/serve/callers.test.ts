// Several signed-in callers on one gateway (or one shared child), as a team uses it: what a server sends reaches
// only the caller whose request it belongs to; what cannot be attributed is dropped and counted, or (a request)
// refused to the server at once. Real children (test/helpers/servers/bank.ts records what reaches it), a real
// JWT issuer (oidc-provider's keys), modern (2026-07-28) callers sharing one gateway, and legacy sessions.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import type { Connection } from '../../lib/client/connection.js';
import type { ServerConfig, StdioServerConfig } from '../../lib/client/config.js';
import { Policy } from '../../lib/gateway/policy.js';
import { listPages } from '../../lib/protocol/paging.js';
import { type ServeHandle, type ServeOptions, serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { type Idp, startIdp } from '../helpers/idp.js';
import { until, within } from '../helpers/poll.js';
import { countIn, MCP_HEADERS, modernPost, openStream, postUnread, type RawRequest, rawRequest } from '../helpers/raw-http.js';
import { floodUnread, rawSession, STEPS, serveProcess } from '../helpers/served.js';
import { tempDir } from '../helpers/temp.js';

type Json = Record<string, unknown>;

const BANK = (name: string, env: Record<string, string> = {}): StdioServerConfig => ({
  command: process.execPath,
  args: [`${ROOT}dist/test/helpers/servers/bank.js`, name],
  env,
});

/** A modern request as a raw client sends it, signed in with `token`. */
function modern(
  token: string,
  id: number | string,
  method: string,
  params: Json,
  meta: Json = {},
  capabilities: Json = {},
  headers: Json = {},
): RawRequest {
  const withMeta = { ...params, _meta: { 'io.modelcontextprotocol/clientCapabilities': capabilities, ...meta } };
  return modernPost(id, method, withMeta, { authorization: `Bearer ${token}`, ...(headers as Record<string, string>) });
}

/** The JSON-RPC messages of a response: its JSON body, or each event's data. */
function messages(body: string): Json[] {
  if (body.startsWith('{')) return [JSON.parse(body) as Json];
  return body
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l.length > 6)
    .map((l) => JSON.parse(l.slice(6)) as Json);
}

describe('serve: several callers on one gateway', function () {
  this.timeout(30_000);
  let idp: Idp;
  let g: ServeHandle | undefined;
  let log: string[];
  let dir: string;

  beforeEach(async () => {
    idp = await startIdp({ alice: { groups: ['eng'], email: 'alice@example.com' }, bob: { groups: ['sales'], email: 'bob@example.com' } });
    dir = tempDir('callers');
  });
  afterEach(async () => {
    await g?.close();
    g = undefined;
    await idp.close();
  });

  async function start(
    servers: StdioServerConfig | Record<string, ServerConfig>,
    options: ServeOptions = {},
  ): Promise<{ url: string; alice: string; bob: string }> {
    log = [];
    g = await serve(servers, { log: (line) => log.push(line), auth: { issuer: idp.issuer, requiredScopes: ['mcp'] }, ...options });
    const url = g.url!;
    const alice = await idp.mint({ aud: url, sub: 'alice', groups: ['eng'], email: 'alice@example.com' });
    const bob = await idp.mint({ aud: url, sub: 'bob', groups: ['sales'], email: 'bob@example.com' });
    return { url, alice, bob };
  }

  /** A session of the initialize era opened with `token` (raw HTTP): the headers its requests carry. */
  async function legacySession(url: string, token: string, capabilities: Json = {}): Promise<Record<string, string>> {
    const headers = { ...MCP_HEADERS, authorization: `Bearer ${token}` };
    const init = await rawRequest(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    return { ...headers, 'mcp-session-id': init.headers['mcp-session-id'] as string };
  }

  /** Every message the bank named `name` received so far (its ledger). */
  const ledger = (name: string): Json[] => {
    try {
      return readFileSync(join(dir, `${name}.jsonl`), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json);
    } catch {
      return [];
    }
  };
  const banked = (name: string): StdioServerConfig => BANK(name, { BANK_LEDGER: join(dir, `${name}.jsonl`) });
  /**
   * Bob starts a transfer at the bank, then cancels it (closes his response) once it arrived; the bank goes on
   * and asks, 400 ms after the cancellation, to confirm it. (A modern response has no headers before its first
   * message: the request is sent, never awaited.)
   */
  async function cancelledTransfer(url: string, bob: string): Promise<void> {
    const transfer = modern(bob, 1, 'tools/call', { name: 'bank__transfer', arguments: { from: 'bob' } }, {}, { elicitation: {} });
    const req = http.request(url, { method: 'POST', headers: transfer.headers, agent: false });
    req.on('error', () => undefined);
    req.end(transfer.body);
    await within(5000, 'the transfer at the bank', called('bank', 'transfer'));
    req.destroy();
    await within(5000, 'the cancellation at the bank', () =>
      Promise.resolve(ledger('bank').some((m) => m.method === 'notifications/cancelled') ? true : undefined),
    );
  }
  const called = (name: string, tool: string) => () =>
    Promise.resolve(ledger(name).some((m) => m.method === 'tools/call' && (m.params as Json).name === tool) ? true : undefined);

  const beside: Array<[string, ServeOptions]> = [
    ['', {}],
    [' (beside a session-isolated server, where the modern requests reach the shared ones through a view)', { isolate: ['own'] }],
  ];
  for (const [how, options] of beside)
    it(`never gives a server's question to another caller: a cancelled call's question is refused to the server${how}`, async () => {
      const isolated: Record<string, ServerConfig> = options.isolate === undefined ? {} : { own: banked('own') };
      const audit = join(dir, 'audit.jsonl');
      const { url, alice, bob } = await start({ bank: banked('bank'), vault: banked('vault'), ...isolated }, { ...options, auditLog: audit });
      const asks = { elicitation: {} };
      await cancelledTransfer(url, bob);
      // Alice's unrelated call is the only one in flight at the bank when the question comes.
      const balance = await rawRequest(url, modern(alice, 1, 'tools/call', { name: 'bank__balance', arguments: { who: 'alice' } }, {}, asks));
      expect(balance.status, balance.body).to.equal(200);
      expect(balance.body).not.to.include('Confirm');
      expect(messages(balance.body).at(-1)).to.deep.include({
        id: 1,
        result: { content: [{ type: 'text', text: 'bank: balance of alice is 12' }], resultType: 'complete' },
      });
      // The bank was told at once that nobody answers it.
      const refused = await within(5000, 'the refusal at the bank', () =>
        Promise.resolve(log.find((l) => /bank confirm answered \{"code":-32000/.test(l))),
      );
      expect(refused).to.match(/cannot tell which caller/);
      expect(g!.unattributed).to.be.at.least(1);
      // A question that is the one call's own still reaches its caller.
      const own = await rawRequest(url, modern(alice, 2, 'tools/call', { name: 'vault__ask', arguments: {} }, {}, asks));
      const result = messages(own.body).at(-1)!.result as Json;
      expect(result.resultType).to.equal('input_required');
      expect(JSON.stringify(result.inputRequests)).to.include('vault asks');
      // The audit trail names each call's caller, the shared servers' too.
      const records = readFileSync(audit, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json);
      expect(records.find((r) => r.name === 'bank__balance')).to.deep.include({ caller: { issuer: idp.issuer, subject: 'alice' }, outcome: 'ok' });
      expect(records.find((r) => r.name === 'bank__transfer')).to.deep.include({ caller: { issuer: idp.issuer, subject: 'bob' } });
    });

  it("holds the same in a real `mcp-frame serve --all` process: a cancelled call's question and forged progress reach nobody", async () => {
    const file = join(dir, 'mcp.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { bank: banked('bank'), vault: banked('vault') } }));
    const proc = await serveProcess(['--config', file, '--all', '--port', '0', '--auth-issuer', idp.issuer, '--required-scope', 'mcp']);
    try {
      const url = proc.url!;
      const alice = await idp.mint({ aud: url, sub: 'alice' });
      const bob = await idp.mint({ aud: url, sub: 'bob' });
      await cancelledTransfer(url, bob);
      const [balance, forged] = await Promise.all([
        rawRequest(
          url,
          modern(alice, 1, 'tools/call', { name: 'bank__balance', arguments: { who: 'alice' } }, { progressToken: 'a' }, { elicitation: {} }),
        ),
        sleep(100).then(() => rawRequest(url, modern(bob, 2, 'tools/call', { name: 'vault__forge', arguments: {} }, { progressToken: 'b' }))),
      ]);
      expect(balance.body).not.to.include('Confirm');
      expect(balance.body).not.to.include('evil.example');
      expect(messages(balance.body).at(-1)).to.deep.include({ id: 1 });
      expect((messages(balance.body).at(-1)!.result as Json).resultType).to.equal('complete');
      expect(forged.status).to.equal(200);
      await within(5000, 'the refusal at the bank', () =>
        Promise.resolve(/bank confirm answered \{"code":-32000/.test(proc.stderr()) ? true : undefined),
      );
    } finally {
      proc.proc.kill('SIGTERM');
      await proc.exited;
    }
  });

  for (const [what, servers, tool] of [
    ['one shared legacy child', () => banked('bank'), 'chatty'],
    ['a gateway', () => ({ bank: banked('bank'), vault: banked('vault') }), 'bank__chatty'],
  ] as const) {
    it(`gives a server's log to no caller but the one whose request it is: ${what}`, async () => {
      const { url, alice, bob } = await start(servers());
      const logs = { 'io.modelcontextprotocol/logLevel': 'debug' };
      // Alice asks for logs on a slow call; Bob's call, which asked for none, logs a secret meanwhile.
      const balanceName = tool === 'chatty' ? 'balance' : 'bank__balance';
      const pending = rawRequest(url, modern(alice, 1, 'tools/call', { name: balanceName, arguments: { who: 'alice' } }, logs));
      await within(5000, 'the balance at the bank', called('bank', 'balance'));
      const bobs = await rawRequest(url, modern(bob, 1, 'tools/call', { name: tool, arguments: { secret: "bob's secret" } }));
      expect(bobs.status).to.equal(200);
      const alices = await pending;
      expect(alices.status).to.equal(200);
      expect(alices.body).not.to.include("bob's secret");
      expect(g!.unattributed).to.be.at.least(1);
      // Alone, Alice gets her own call's log.
      const mine = await rawRequest(url, modern(alice, 2, 'tools/call', { name: tool, arguments: { secret: "alice's note" } }, logs));
      const log = messages(mine.body).find((m) => m.method === 'notifications/message');
      expect(log?.params).to.deep.include({ data: "alice's note" });
    });
  }

  it("accepts a progress token only from the server it was given to, and no server can guess another's", async () => {
    const { url, alice, bob } = await start({ bank: banked('bank'), vault: banked('vault') });
    const pending = rawRequest(url, modern(alice, 1, 'tools/call', { name: 'vault__steps', arguments: {} }, { progressToken: 'alice-1' }));
    await within(5000, 'the steps at the vault', called('vault', 'steps'));
    const forged = await rawRequest(url, modern(bob, 1, 'tools/call', { name: 'bank__forge', arguments: {} }, { progressToken: 'bob-1' }));
    expect(forged.status).to.equal(200);
    const alices = await pending;
    expect(alices.body, alices.body.slice(0, 600)).not.to.include('evil.example');
    const progress = messages(alices.body).filter((m) => m.method === 'notifications/progress');
    expect(progress.map((m) => m.params)).to.deep.equal([1, 2, 3].map((progress) => ({ progressToken: 'alice-1', progress, total: 3 })));
    expect(forged.body, forged.body.slice(0, 900)).not.to.include('evil.example');
    // The tokens the servers were given are not a counter.
    const given = ledger('vault').find((m) => m.method === 'tools/call')!;
    expect(((given.params as Json)._meta as Json).progressToken).to.match(/^mcp-frame-[0-9a-f-]{36}$/);
  });

  it("puts the signed-in caller's claims, or none, on every message that reaches a server", async () => {
    const { url, alice } = await start({ bank: banked('bank'), vault: banked('vault') }, { forwardClaims: ['email'] });
    const forged = { 'mcp-frame/caller': { email: 'admin@bank.example' } };
    const session = await legacySession(url, alice, { elicitation: {}, roots: {} });
    const post = (body: Json) => rawRequest(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', ...body }) });
    expect((await post({ method: 'notifications/initialized' })).status).to.equal(202);
    expect((await post({ id: 2, method: 'logging/setLevel', params: { level: 'debug', _meta: forged } })).status).to.equal(200);
    expect((await post({ method: 'notifications/roots/list_changed', params: { _meta: forged } })).status).to.equal(202);
    // The bank asks during Alice's call; her answer carries forged claims.
    const asking = await openStream(url, {
      method: 'POST',
      headers: session,
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'bank__ask', arguments: {}, _meta: forged } }),
    });
    // The stream's first event primes it (an id, no data); the question comes next.
    await asking.until(2);
    const question = JSON.parse(asking.events.find((e) => e.data !== '')!.data) as Json;
    expect(question.method).to.equal('elicitation/create');
    await post({ id: question.id, result: { action: 'accept', content: {}, _meta: forged } });
    await asking.until(3);
    await within(5000, 'the answer at the bank', () => Promise.resolve(ledger('bank').some((m) => m.result !== undefined) ? true : undefined));
    const reached = ledger('bank').filter((m) => m.method !== 'initialize' && m.method !== 'tools/list');
    expect(reached.map((m) => m.method ?? 'answer')).to.include.members([
      'logging/setLevel',
      'notifications/roots/list_changed',
      'tools/call',
      'answer',
    ]);
    for (const m of reached) {
      const meta = ((m.params ?? m.result ?? {}) as Json)._meta as Json | undefined;
      if (m.method === 'notifications/initialized' || m.method === 'notifications/cancelled') continue;
      expect(meta?.['mcp-frame/caller'], JSON.stringify(m)).to.deep.equal({ email: 'alice@example.com' });
    }
  });

  it('checks Mcp-Param-* headers of a tool the policy hides from some callers', async () => {
    const policy = Policy.parse(
      JSON.stringify({
        rules: [
          { tools: ['*'], except: ['bank__wire'] },
          { tools: ['bank__wire'], claims: { groups: 'eng' } },
        ],
      }),
    );
    const { url, alice, bob } = await start({ bank: banked('bank'), vault: banked('vault') }, { policy });
    const wire = (token: string, header: string) =>
      rawRequest(url, modern(token, 1, 'tools/call', { name: 'bank__wire', arguments: { account: 'A-1' } }, {}, {}, { 'mcp-param-account': header }));
    const mismatch = await wire(alice, 'B-2');
    expect(mismatch.status, mismatch.body).to.equal(400);
    expect((JSON.parse(mismatch.body) as { error: { code: number } }).error.code).to.equal(-32020);
    const right = await wire(alice, 'A-1');
    expect(right.status).to.equal(200);
    expect(right.body).to.include('wired from A-1');
    // Bob is not allowed the tool at all: it is unknown to him, header or not.
    expect((await wire(bob, 'A-1')).body).to.match(/Unknown tool/);
  });

  it('keeps an audit trail: a record per call sent on or refused, naming the caller by issuer and subject, in the log and a 0600 file', async () => {
    const policy = Policy.parse(
      JSON.stringify({ rules: [{ tools: ['bank__*', 'vault__balance'] }, { tools: ['vault__steps'], claims: { groups: 'eng' } }] }),
    );
    const file = join(dir, 'audit.jsonl');
    writeFileSync(file, '', { mode: 0o644 });
    const { url, alice, bob } = await start(
      { bank: banked('bank'), vault: banked('vault') },
      { policy, auditLog: file, denyTools: ['bank__forge'], rateLimit: '2/m' },
    );
    const call = (token: string, id: number, name: string, args: Json) => rawRequest(url, modern(token, id, 'tools/call', { name, arguments: args }));
    expect((await call(alice, 1, 'vault__balance', { who: 'alice', ms: 1 })).body).to.include('balance of alice');
    expect((await call(bob, 2, 'vault__steps', {})).body, 'the policy refuses Bob').to.match(/Unknown tool/);
    expect((await call(alice, 3, 'bank__forge', {})).body, 'the filter leaves it out').to.match(/Unknown tool/);
    const records = (): Json[] =>
      readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json);
    await until(5000, 'three records', () => records().length >= 3, 10);
    const [ok, byPolicy, byFilter] = records();
    expect(ok).to.deep.include({
      event: 'audit',
      caller: { issuer: idp.issuer, subject: 'alice' },
      method: 'tools/call',
      server: 'vault',
      name: 'vault__balance',
      outcome: 'ok',
    });
    expect(ok!.duration_ms).to.be.a('number');
    expect(byPolicy).to.deep.include({ caller: { issuer: idp.issuer, subject: 'bob' }, name: 'vault__steps', outcome: 'refused', why: 'policy' });
    expect(byFilter).to.deep.include({ name: 'bank__forge', outcome: 'refused', why: 'filter' });
    expect(statSync(file).mode & 0o777, "the owner's alone").to.equal(0o600);
    const text = readFileSync(file, 'utf8');
    for (const secret of [alice, bob, 'alice@example.com']) expect(text).not.to.include(secret);
    expect(log.filter((l) => l.includes('audit: alice tools/call vault/vault__balance: ok in'))).to.have.length(1);
    expect(log.some((l) => l.includes('audit: bob tools/call -/vault__steps: refused (policy)'))).to.equal(true);
    // Over her rate: refused, and a record says so.
    expect((await call(alice, 4, 'vault__balance', { who: 'alice', ms: 1 })).status).to.equal(429);
    await until(5000, 'the rate refusal', () => records().length >= 4, 10);
    expect(records()[3]).to.deep.include({
      caller: { issuer: idp.issuer, subject: 'alice' },
      name: 'vault__balance',
      outcome: 'refused',
      why: 'rate',
    });
    // A call in a session of the initialize era names its session (short id).
    const session = await legacySession(url, bob);
    const id = session['mcp-session-id']!;
    await rawRequest(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    const called = await rawRequest(url, {
      method: 'POST',
      headers: session,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'vault__balance', arguments: { who: 'bob', ms: 1 } } }),
    });
    expect(called.body).to.include('balance of bob');
    await until(5000, 'the session record', () => records().length >= 5, 10);
    expect(records()[4]).to.deep.include({ caller: { issuer: idp.issuer, subject: 'bob' }, session: id.slice(0, 8), server: 'vault', outcome: 'ok' });
    expect(
      records()
        .slice(0, 4)
        .every((r) => r.session === undefined),
      'modern requests have no session',
    ).to.equal(true);
  });

  it("checks a modern call's Mcp-Param-* headers from what the gateway listed: no server is asked for its list again", async () => {
    const { url, alice } = await start({ bank: banked('bank'), vault: banked('vault') });
    const listed = await rawRequest(url, modern(alice, 1, 'tools/list', {}));
    expect(listed.status, listed.body).to.equal(200);
    expect(listed.body).to.include('bank__wire');
    const lists = (name: string): number => ledger(name).filter((m) => m.method === 'tools/list').length;
    const before = { bank: lists('bank'), vault: lists('vault') };
    expect(before).to.deep.equal({ bank: 1, vault: 1 });
    const wire = (id: number, header: string) =>
      rawRequest(
        url,
        modern(alice, id, 'tools/call', { name: 'bank__wire', arguments: { account: 'A-1' } }, {}, {}, { 'mcp-param-account': header }),
      );
    const mismatch = await wire(2, 'B-2');
    expect(mismatch.status, mismatch.body).to.equal(400);
    expect((JSON.parse(mismatch.body) as { error: { code: number } }).error.code).to.equal(-32020);
    const right = await wire(3, 'A-1');
    expect(right.status, right.body).to.equal(200);
    expect(right.body).to.include('wired from A-1');
    const plain = await rawRequest(url, modern(alice, 4, 'tools/call', { name: 'vault__balance', arguments: { who: 'alice', ms: 1 } }));
    expect(plain.status, plain.body).to.equal(200);
    expect({ bank: lists('bank'), vault: lists('vault') }).to.deep.equal(before);
  });
});

describe('serve: one server or one client cannot stop the rest of a gateway', function () {
  this.timeout(30_000);
  let g: ServeHandle | undefined;
  let log: string[];
  const open: Connection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
    await g?.close();
    g = undefined;
  });

  const PEER = (name: string, env: Record<string, string> = {}): StdioServerConfig => ({
    command: process.execPath,
    args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, name],
    env,
  });

  it('leaves a server that never answers its list out of it, says so on /healthz, and the other servers are called at once', async () => {
    log = [];
    g = await serve(
      { a: PEER('a'), stuck: PEER('stuck', { PEER_MUTE: 'tools/list' }) },
      { log: (line) => log.push(line), prefix: 'conflicts', upstreamListMs: 400 },
    );
    for (const protocolVersion of ['2025-11-25', '2026-07-28']) {
      const c = await connect({ type: 'http', url: g.url! }, { protocolVersion });
      open.push(c);
      const listing = await listPages((cursor) => c.request('tools/list', cursor === undefined ? {} : { cursor }), 'tools');
      expect(listing.items.map((t) => (t as { name: string }).name)).to.include('a-only');
      const before = Date.now();
      expect(await c.request('tools/call', { name: 'a-only', arguments: { text: protocolVersion } })).to.deep.include({
        content: [{ type: 'text', text: `a: ${protocolVersion}` }],
      });
      // Skipped for a while after it timed out: the call did not wait for it again.
      expect(Date.now() - before, 'a call while the stuck server is skipped').to.be.below(300);
    }
    const health = JSON.parse((await rawRequest(`${new URL(g.url!).origin}/healthz`)).body) as { servers: Record<string, Json> };
    expect(health.servers.stuck).to.deep.include({ state: 'up' });
    expect(health.servers.stuck!.problem).to.match(/tools\/list went unanswered for 400 ms/);
    expect(health.servers.a).to.deep.equal({ state: 'up' });
    expect(log.some((l) => /server "stuck" failed tools\/list: request tools\/list timed out/.test(l))).to.equal(true);
  });

  it("holds a session's own servers (isolate) while its client does not read, through the gateway as served directly", async () => {
    log = [];
    g = await serve({ a: STEPS, b: STEPS }, { log: (line) => log.push(line), isolate: ['a'] });
    await floodUnread(g.url!, 'a__flood', log);
  });

  it("holds no shared server for a session whose client does not read: past 8 MiB unread its call is cancelled, and other sessions' calls go on", async () => {
    log = [];
    g = await serve({ a: STEPS, b: STEPS }, { log: (line) => log.push(line) });
    const session = await rawSession(g.url!);
    const rssBefore = process.memoryUsage().rss;
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'a__flood', arguments: { count: 1000, size: 64 * 1024 } },
    });
    const res = await postUnread(g.url!, session, body);
    // The server is not held: it writes every message while this client reads none.
    await until(10_000, 'the server writing all 1,000', () => log.some((l) => /flood wrote 1000\b/.test(l)), 20);
    const other = await connect({ type: 'http', url: g.url! }, { protocolVersion: '2025-11-25' });
    open.push(other);
    expect(await other.request('tools/call', { name: 'a__echo', arguments: { text: 'not held' } })).to.deep.equal({
      content: [{ type: 'text', text: 'not held' }],
    });
    expect(process.memoryUsage().rss - rssBefore, 'RSS growth while nobody read').to.be.below(48 * 1024 * 1024);
    const { count, tail } = await countIn(res, '"method":"notifications/message"');
    expect(count, 'the messages before the call was cancelled').to.be.within(1, 999);
    expect(tail).to.include('cancelled: its client left more than 8388608 bytes unread');
  });
});
