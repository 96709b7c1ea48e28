import { expect } from 'chai';
import { connectOver } from '../../lib/client/connection.js';
import { Gateway, type GatewayOptions } from '../../lib/gateway/gateway.js';
import { LISTEN_ENDED, ModernFace } from '../../lib/gateway/modern.js';
import { RunningCalls } from '../../lib/gateway/running.js';
import type { UpstreamOpener } from '../../lib/gateway/upstream.js';
import type { Caller } from '../../lib/protocol/caller.js';
import { META_SUBSCRIPTION_ID } from '../../lib/protocol/modern.js';
import { type Asked, demoChannel, scriptedChannel } from '../helpers/memory-server.js';
import { within } from '../helpers/poll.js';

type Json = Record<string, unknown>;

const ENTRY = { command: 'unused' };
const demoOpener: UpstreamOpener = (name, _entry, { capabilities, onSpawn }) => connectOver(demoChannel(name), { capabilities, onSpawn });
const alice: Caller = { subject: 'alice', scopes: [], claims: {} };
const bob: Caller = { subject: 'bob', scopes: [], claims: {} };

/** A modern request's `_meta`: its protocol version, who the client is, and what it can answer. */
function meta(capabilities: Json = {}, extra: Json = {}): Json {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    ...extra,
  };
}

describe('gateway/modern: the gateway speaks 2026-07-28 itself', () => {
  let gateway: Gateway | undefined;
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });

  /** A gateway, and what it sends its client (all of it, in order). */
  function open(options: Partial<GatewayOptions> & Pick<GatewayOptions, 'upstreams'>): {
    gateway: Gateway;
    out: Json[];
    answer(id: unknown): Promise<Json>;
  } {
    const g = new Gateway({ open: demoOpener, shared: true, ...options });
    gateway = g;
    const out: Json[] = [];
    g.on('message', (msg: Json) => out.push(msg));
    const answer = (id: unknown): Promise<Json> =>
      within(5000, `the answer to ${String(id)}`, () => out.find((m) => m.id === id && m.method === undefined));
    return { gateway: g, out, answer };
  }

  it('answers server/discover from its servers, merged, and refuses the methods the revision removed', async () => {
    const { gateway: g, answer } = open({
      upstreams: [
        ['a', ENTRY],
        ['b', ENTRY],
      ],
      name: 'team',
    });
    await g.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta() } });
    const discovered = (await answer(1)).result as Json;
    expect(discovered.supportedVersions).to.deep.equal(['2026-07-28']);
    expect(discovered).to.deep.include({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
    expect((discovered._meta as Json)['io.modelcontextprotocol/serverInfo']).to.deep.include({ name: 'team' });
    expect(discovered.capabilities).to.deep.include({ tools: { listChanged: true } });
    for (const [id, method] of [
      [2, 'ping'],
      [3, 'initialize'],
      [4, 'logging/setLevel'],
    ] as const) {
      await g.send({ jsonrpc: '2.0', id, method, params: { _meta: meta() } });
      expect((await answer(id)).error).to.deep.include({ code: -32601 });
    }
    // The same gateway still answers the initialize era.
    await g.send({ jsonrpc: '2.0', id: 5, method: 'ping' });
    expect((await answer(5)).result).to.deep.equal({});
  });

  it('routes a modern call to its server with none of the modern metadata, and answers it complete', async () => {
    const seen: Asked[] = [];
    const opener: UpstreamOpener = (_n, _e, { onSpawn }) =>
      connectOver(
        scriptedChannel((q) => {
          seen.push(q);
          q.answer(q.method === 'tools/list' ? { tools: [{ name: 'read', inputSchema: { type: 'object' } }] } : { content: [] });
        }).channel,
        { protocolVersion: '2025-11-25', onSpawn },
      );
    const { gateway: g, answer } = open({
      upstreams: [
        ['s', ENTRY],
        ['t', ENTRY],
      ],
      open: opener,
    });
    await g.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 's__read', arguments: {}, _meta: meta({}, { trace: 'kept' }) } });
    expect((await answer(7)).result).to.deep.equal({ content: [], resultType: 'complete' });
    const call = seen.find((q) => q.method === 'tools/call')!;
    expect(call.params).to.deep.equal({ name: 'read', arguments: {}, _meta: { trace: 'kept' } });
    await g.send({ jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: meta() } });
    expect((await answer(8)).result).to.deep.include({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
  });

  /** A legacy server whose `ask` tool asks the client (elicitation) and answers with what it was told. */
  function asking(): { opener: UpstreamOpener; servers: Array<ReturnType<typeof scriptedChannel>> } {
    const servers: Array<ReturnType<typeof scriptedChannel>> = [];
    let n = 0;
    const opener: UpstreamOpener = (_n, _e, { capabilities, onSpawn }) => {
      const server = scriptedChannel((q) => {
        if (q.method === 'tools/list') return q.answer({ tools: [{ name: 'ask', inputSchema: { type: 'object' } }] });
        const id = `q${++n}`;
        server.say({ jsonrpc: '2.0', id, method: 'elicitation/create', params: { message: 'which account?', requestedSchema: { type: 'object' } } });
        void within(5000, 'the answer to the question', () => server.answers.find((a) => a.id === id)).then((a) =>
          q.answer({ content: [{ type: 'text', text: JSON.stringify(a.result ?? a.error) }] }),
        );
      });
      servers.push(server);
      return connectOver(server.channel, { protocolVersion: '2025-11-25', capabilities, onSpawn });
    };
    return { opener, servers };
  }

  it("turns a legacy server's question during a modern call into input_required, and the retry completes the same call", async () => {
    const { opener, servers } = asking();
    const { gateway: g, answer } = open({ upstreams: [['s', ENTRY]], open: opener, statePrefix: 'replica-1' });
    const caps = { elicitation: {} };
    await g.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask', arguments: {}, _meta: meta(caps) } }, alice);
    const first = (await answer(1)).result as Json;
    expect(first.resultType).to.equal('input_required');
    expect(first.inputRequests).to.deep.equal({
      input: { method: 'elicitation/create', params: { message: 'which account?', requestedSchema: { type: 'object' } } },
    });
    expect(first.requestState).to.match(/^replica-1\.[0-9a-f-]{36}$/);
    // Another caller cannot answer it.
    const retry = {
      name: 'ask',
      arguments: {},
      requestState: first.requestState,
      inputResponses: { input: { action: 'accept', content: { account: 'x' } } },
    };
    await g.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { ...retry, _meta: meta(caps) } }, bob);
    expect((await answer(2)).error).to.deep.include({ code: -32602 });
    await g.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { ...retry, _meta: meta(caps) } }, alice);
    const done = (await answer(3)).result as { content: Array<{ text: string }>; resultType: string };
    expect(JSON.parse(done.content[0]!.text)).to.deep.equal({ action: 'accept', content: { account: 'x' } });
    expect(done.resultType).to.equal('complete');
    expect(servers[0]!.notified.filter((m) => m.method === 'notifications/cancelled')).to.deep.equal([]);
    // A state is used once.
    await g.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { ...retry, _meta: meta(caps) } }, alice);
    expect((await answer(4)).error).to.deep.include({ code: -32602 });
  });

  it('answers -32021 when the calling request did not declare what the server asks, and cancels the call at its server', async () => {
    const { opener, servers } = asking();
    const { gateway: g, answer } = open({ upstreams: [['s', ENTRY]], open: opener });
    await g.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask', arguments: {}, _meta: meta({}) } }, alice);
    const refused = (await answer(1)).error as Json;
    expect(refused).to.deep.include({ code: -32021, data: { requiredCapabilities: { elicitation: {} } } });
    await within(5000, 'the call cancelled at its server', () => servers[0]!.notified.find((m) => m.method === 'notifications/cancelled'));
    expect(servers[0]!.answers[0]!.error).to.deep.include({ message: 'the client did not declare elicitation' });
  });

  it("acknowledges a listen with what its servers give, delivers a server's list change to it alone, and subscribes a resource once", async () => {
    const servers: Array<ReturnType<typeof scriptedChannel>> = [];
    const asked: string[] = [];
    const opener: UpstreamOpener = (_n, _e, { onSpawn }) => {
      const server = scriptedChannel(
        (q) => {
          asked.push(q.method);
          if (q.method === 'resources/list') q.answer({ resources: [{ uri: 'file:///a', name: 'a' }] });
          else q.answer(q.method === 'resources/templates/list' ? { resourceTemplates: [] } : {});
        },
        { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } },
      );
      servers.push(server);
      return connectOver(server.channel, { protocolVersion: '2025-11-25', onSpawn });
    };
    const { gateway: g, out } = open({ upstreams: [['s', ENTRY]], open: opener });
    const filter = { toolsListChanged: true, resourceSubscriptions: ['file:///a'] };
    await g.send({ jsonrpc: '2.0', id: 10, method: 'subscriptions/listen', params: { notifications: filter, _meta: meta() } });
    await g.send({
      jsonrpc: '2.0',
      id: 11,
      method: 'subscriptions/listen',
      params: { notifications: { resourceSubscriptions: ['file:///a'] }, _meta: meta() },
    });
    const acks = await within(5000, 'two acknowledgements', () => {
      const found = out.filter((m) => m.method === 'notifications/subscriptions/acknowledged');
      return found.length === 2 ? found : undefined;
    });
    expect((acks[0]!.params as Json).notifications).to.deep.equal(filter);
    expect(((acks[0]!.params as Json)._meta as Json)[META_SUBSCRIPTION_ID]).to.equal(10);
    const server = servers[0]!;
    server.say({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    server.say({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///a' } });
    const updates = await within(5000, 'the update to both listens', () => {
      const found = out.filter((m) => m.method === 'notifications/resources/updated');
      return found.length === 2 ? found : undefined;
    });
    expect(updates.map((m) => ((m.params as Json)._meta as Json)[META_SUBSCRIPTION_ID])).to.deep.equal([10, 11]);
    const changes = out.filter((m) => m.method === 'notifications/tools/list_changed');
    expect(
      changes.map((m) => ((m.params as Json)._meta as Json)[META_SUBSCRIPTION_ID]),
      'only the listen that asked',
    ).to.deep.equal([10]);
    expect(
      asked.filter((m) => m === 'resources/subscribe'),
      'one URI, subscribed once for two listens',
    ).to.have.length(1);
    // Neither listen ever gets an answer; the last to end unsubscribes, once.
    await g.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 10 } });
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked, 'a listen still watches it').not.to.include('resources/unsubscribe');
    await g.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 11 } });
    await within(5000, 'resources/unsubscribe at the server', () => (asked.includes('resources/unsubscribe') ? true : undefined));
    expect(asked.filter((m) => m === 'resources/unsubscribe')).to.have.length(1);
    expect(out.filter((m) => m.id === 10 || m.id === 11)).to.deep.equal([]);
  });

  it('ModernFace alone: a listen ends with LISTEN_ENDED and no answer, and only list changes and resource updates are carried', async () => {
    const emitted: Json[] = [];
    const face = new ModernFace(
      {
        start: async () => ({ capabilities: { tools: { listChanged: true } } }),
        dispatch: async () => ({}),
        uriRequest: async () => true,
        emit: (msg) => void emitted.push(msg),
        calls: new RunningCalls(),
        ups: () => [],
      },
      undefined,
    );
    const call = { key: 'number:5', id: 5, caller: undefined, modern: { capabilities: {}, interrupt: () => false } };
    const listening = face.request(call, 'subscriptions/listen', { notifications: { toolsListChanged: true, promptsListChanged: true } });
    await within(2000, 'the acknowledgement', () => emitted.find((m) => m.method === 'notifications/subscriptions/acknowledged'));
    expect((emitted[0]!.params as Json).notifications, 'prompts are not offered').to.deep.equal({ toolsListChanged: true });
    expect(face.deliver({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })).to.equal(true);
    expect(face.deliver({ jsonrpc: '2.0', method: 'notifications/message', params: {} })).to.equal(false);
    expect(emitted.map((m) => m.method)).to.deep.equal(['notifications/subscriptions/acknowledged', 'notifications/tools/list_changed']);
    face.cancelled('number:5');
    expect(await listening).to.equal(LISTEN_ENDED);
    expect(face.deliver({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }), 'still of the kind').to.equal(true);
    expect(emitted, 'no listen left to get it').to.have.length(2);
  });
});
