import { expect } from 'chai';
import { type Connection, connectOver, RpcError } from '../../lib/client/connection.js';
import { CALLER_META, Gateway, type GatewayOptions } from '../../lib/gateway/gateway.js';
import { Policy } from '../../lib/gateway/policy.js';
import { UpstreamHealth, type UpstreamOpener } from '../../lib/gateway/upstream.js';
import type { Caller } from '../../lib/protocol/caller.js';
import { type Asked, demoChannel, scriptedChannel } from '../helpers/memory-server.js';
import { rejection } from '../helpers/rejection.js';
import { within } from '../helpers/poll.js';

const ENTRY = { command: 'unused' };
const demoOpener: UpstreamOpener = (name, _entry, { capabilities, onSpawn }) => connectOver(demoChannel(name), { capabilities, onSpawn });

describe('gateway/gateway: several servers as one, in process', () => {
  let client: Connection | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
  });

  async function open(options: Partial<GatewayOptions> & Pick<GatewayOptions, 'upstreams'>): Promise<{ gateway: Gateway; client: Connection }> {
    const gateway = new Gateway({ open: demoOpener, ...options });
    client = await connectOver(gateway, { protocolVersion: '2025-11-25' });
    return { gateway, client };
  }

  const names = async (c: Connection): Promise<string[]> =>
    ((await c.request('tools/list', {})) as { tools: Array<{ name: string }> }).tools.map((t) => t.name);

  it("answers initialize as one server and lists every server's tools under its prefix, in config order", async () => {
    const { client: c } = await open({
      upstreams: [
        ['a', ENTRY],
        ['b', ENTRY],
      ],
      name: 'team',
    });
    expect(c.initializeResult).to.deep.include({ protocolVersion: '2025-11-25' });
    expect((c.initializeResult as { serverInfo: { name: string } }).serverInfo.name).to.equal('team');
    expect(await names(c)).to.deep.equal(['a__echo', 'a__add', 'a__blob', 'b__echo', 'b__add', 'b__blob']);
  });

  it('routes a call by its prefix to that server, and refuses a name no server offers', async () => {
    const { client: c } = await open({
      upstreams: [
        ['a', ENTRY],
        ['b', ENTRY],
      ],
      separator: '.',
    });
    expect(await c.request('tools/call', { name: 'b.add', arguments: { a: 2, b: 40 } })).to.deep.include({ content: [{ type: 'text', text: '42' }] });
    const text = 'ünï 👩‍👧 \u2028';
    expect(await c.request('tools/call', { name: 'a.echo', arguments: { text } })).to.deep.equal({ content: [{ type: 'text', text }] });
    const unknown = (await rejection(c.request('tools/call', { name: 'c.echo', arguments: {} }))) as RpcError;
    expect(unknown).to.be.instanceOf(RpcError);
    expect(unknown.message).to.include('c.echo');
  });

  it('names one server as it is, or with its prefix when asked (prefixOne), routing either way', async () => {
    const { client: plain } = await open({ upstreams: [['a', ENTRY]] });
    expect(await names(plain)).to.deep.equal(['echo', 'add', 'blob']);
    await plain.close();
    const { client: c } = await open({ upstreams: [['a', ENTRY]], prefixOne: true });
    expect(await names(c)).to.deep.equal(['a__echo', 'a__add', 'a__blob']);
    expect(await c.request('tools/call', { name: 'a__add', arguments: { a: 1, b: 2 } })).to.deep.include({ content: [{ type: 'text', text: '3' }] });
    expect(((await rejection(c.request('tools/call', { name: 'add', arguments: { a: 1, b: 2 } }))) as Error).message).to.include('add');
  });

  it('prefixes only the names two servers share with prefix conflicts, and filters exposed names by globs', async () => {
    const opener: UpstreamOpener = (name, entry, options) =>
      name === 'a'
        ? demoOpener(name, entry, options)
        : connectOver(
            scriptedChannel((q) =>
              q.method === 'tools/list'
                ? q.answer({ tools: ['read', 'echo'].map((n) => ({ name: n, inputSchema: { type: 'object' } })) })
                : q.answer({ content: [{ type: 'text', text: `b ran ${String(q.params.name)}` }] }),
            ).channel,
            { protocolVersion: '2025-06-18', onSpawn: options.onSpawn },
          );
    const { client: c } = await open({
      upstreams: [
        ['a', ENTRY],
        ['b', ENTRY],
      ],
      open: opener,
      prefix: 'conflicts',
      denyTools: ['blob'],
    });
    expect(await names(c)).to.deep.equal(['a__echo', 'add', 'read', 'b__echo']);
    expect(await c.request('tools/call', { name: 'b__echo', arguments: {} })).to.deep.equal({ content: [{ type: 'text', text: 'b ran echo' }] });
    expect(await c.request('tools/call', { name: 'read', arguments: {} })).to.deep.equal({ content: [{ type: 'text', text: 'b ran read' }] });
    expect(((await rejection(c.request('tools/call', { name: 'blob', arguments: { bytes: 1 } }))) as Error).message).to.include('blob');
    expect(((await rejection(c.request('tools/call', { name: 'echo', arguments: {} }))) as Error).message).to.include('echo');
  });

  it('lists and allows only what the policy gives the caller, and forwards only the claims it is told to', async () => {
    const seen: Asked[] = [];
    const caller: Caller = { subject: 'iss|dev', scopes: [], claims: { sub: 'dev', groups: ['dev'], email: 'dev@example.com' } };
    const policy = Policy.parse(JSON.stringify({ rules: [{ tools: ['s__read'], claims: { groups: 'dev' } }] }));
    const scripted: UpstreamOpener = (_n, _e, { onSpawn }) =>
      connectOver(
        scriptedChannel((q) => {
          seen.push(q);
          if (q.method === 'tools/list')
            q.answer({
              tools: [
                { name: 'read', inputSchema: { type: 'object' } },
                { name: 'write', inputSchema: { type: 'object' } },
              ],
            });
          else q.answer({ content: [{ type: 'text', text: 'ok' }] });
        }).channel,
        { protocolVersion: '2025-06-18', onSpawn },
      );
    const { client: c } = await open({
      upstreams: [
        ['s', ENTRY],
        ['t', ENTRY],
      ],
      open: scripted,
      caller,
      policy: () => policy,
      forwardClaims: ['sub'],
    });
    expect(await names(c)).to.deep.equal(['s__read']);
    expect(await c.request('tools/call', { name: 's__read', arguments: {} })).to.deep.equal({ content: [{ type: 'text', text: 'ok' }] });
    await rejection(c.request('tools/call', { name: 's__write', arguments: {} }));
    await rejection(c.request('tools/call', { name: 't__read', arguments: {} }));
    const calls = seen.filter((q) => q.method === 'tools/call');
    expect(calls.map((q) => q.params.name)).to.deep.equal(['read']);
    expect((calls[0]!.params._meta as Record<string, unknown>)[CALLER_META]).to.deep.equal({ sub: 'dev' });
  });

  it('knows what each tool it listed declares in x-mcp-header, until its server says its list changed', async () => {
    const servers: Array<ReturnType<typeof scriptedChannel>> = [];
    const tools = [
      { name: 'wire', inputSchema: { type: 'object', properties: { account: { type: 'string', 'x-mcp-header': 'Account' } } } },
      { name: 'broken', inputSchema: { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } } },
      { name: 'plain', inputSchema: { type: 'object' } },
    ];
    const opener: UpstreamOpener = (_n, _e, { onSpawn }) => {
      const server = scriptedChannel((q) => (q.method === 'tools/list' ? q.answer({ tools }) : q.answer({})), { tools: { listChanged: true } });
      servers.push(server);
      return connectOver(server.channel, { protocolVersion: '2025-06-18', onSpawn });
    };
    const { gateway, client: c } = await open({
      upstreams: [
        ['bank', ENTRY],
        ['vault', ENTRY],
      ],
      open: opener,
    });
    expect(gateway.declaredHeaders('bank__wire'), 'not listed yet').to.equal(undefined);
    await names(c);
    expect(gateway.declaredHeaders('bank__wire')).to.deep.equal([{ name: 'Account', path: ['account'] }]);
    expect(gateway.declaredHeaders('vault__plain')).to.deep.equal([]);
    expect(gateway.declaredHeaders('vault__broken'), 'annotations that break the rules declare nothing').to.deep.equal([]);
    expect(gateway.declaredHeaders('bank__nothing')).to.equal(undefined);
    expect(gateway.declaredHeaders('elsewhere__wire')).to.equal(undefined);
    servers[0]!.say({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await within(2000, 'the list change heard', () => (gateway.declaredHeaders('bank__wire') === undefined ? true : undefined), 5);
    expect(gateway.declaredHeaders('vault__plain'), "the other server's are kept").to.deep.equal([]);
  });

  it('goes on without a server that does not start, reports it down, and names it when called', async () => {
    const health = new UpstreamHealth(['a', 'broken']);
    const opener: UpstreamOpener = (name, entry, options) =>
      name === 'broken' ? Promise.reject(new Error('spawn ENOENT')) : demoOpener(name, entry, options);
    const lines: string[] = [];
    const { gateway, client: c } = await open({
      upstreams: [
        ['a', ENTRY],
        ['broken', ENTRY],
      ],
      open: opener,
      health,
      log: (l) => lines.push(l),
    });
    expect(await names(c)).to.deep.equal(['a__echo', 'a__add', 'a__blob']);
    expect(health.report().broken).to.deep.include({ state: 'down' });
    expect(health.report().a).to.deep.equal({ state: 'up' });
    expect(lines.some((l) => l.includes('server "broken" is down: it did not start: spawn ENOENT'))).to.equal(true);
    await c.close();
    client = undefined;
    // Closing the client closes the gateway; it takes nothing after.
    expect(((await rejection(gateway.send({ jsonrpc: '2.0', id: 1, method: 'ping' }))) as Error).message).to.match(
      /the gateway "mcp-frame" is closed/,
    );
  });

  it('warns of a filter or policy glob that matches no tool any server offers, and again after the policy changes', async () => {
    const lines: string[] = [];
    let policy = Policy.parse(JSON.stringify({ rules: [{ tools: ['a__*'] }, { tools: ['add'] }] }));
    const { gateway } = await open({
      upstreams: [
        ['a', ENTRY],
        ['b', ENTRY],
      ],
      allowTools: ['echo', 'a__*', 'b__*'],
      denyTools: ['b__blob'],
      policy: () => policy,
      log: (l) => lines.push(l),
    });
    const unmatched = (): string[] => lines.filter((l) => l.includes('matches no tool or prompt any server offers'));
    await within(5000, 'the warnings', () => (unmatched().length >= 2 ? true : undefined), 10);
    expect(unmatched().map((l) => l.slice(0, l.indexOf(' matches')))).to.deep.equal(['--allow-tools echo', 'the policy\'s rules[1].tools "add"']);
    policy = Policy.parse(JSON.stringify({ rules: [{ tools: ['a__*', 'b__ad?'] }, { tools: ['nothing__here'] }] }));
    await gateway.policyChanged();
    expect(
      unmatched()
        .slice(2)
        .map((l) => l.slice(0, l.indexOf(' matches'))),
    ).to.deep.equal(['--allow-tools echo', 'the policy\'s rules[1].tools "nothing__here"']);
  });
});
