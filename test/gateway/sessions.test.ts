import { expect } from 'chai';
import { connectOver } from '../../lib/client/connection.js';
import { Gateway } from '../../lib/gateway/gateway.js';
import { GatewaySessions, type GatewayView } from '../../lib/gateway/sessions.js';
import type { UpstreamOpener } from '../../lib/gateway/upstream.js';
import type { Caller } from '../../lib/protocol/caller.js';
import { type Asked, scriptedChannel } from '../helpers/memory-server.js';
import { within } from '../helpers/poll.js';

type Json = Record<string, unknown>;

const ENTRY = { command: 'unused' };
const alice: Caller = { subject: 'alice', scopes: [], claims: {} };
const bob: Caller = { subject: 'bob', scopes: [], claims: {} };

describe('gateway/sessions: one gateway, its servers run once, for many sessions of the initialize era', () => {
  let gateway: Gateway | undefined;
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });

  /** A shared gateway over one scripted legacy server, and what the server was asked. */
  function shared(onRequest: (q: Asked, server: ReturnType<typeof scriptedChannel>) => void) {
    const servers: Array<ReturnType<typeof scriptedChannel>> = [];
    const asked: Asked[] = [];
    let opened = 0;
    const opener: UpstreamOpener = (_n, _e, { capabilities, onSpawn }) => {
      opened++;
      const server = scriptedChannel(
        (q) => {
          asked.push(q);
          onRequest(q, server);
        },
        { tools: {}, logging: {}, resources: { subscribe: true } },
      );
      servers.push(server);
      return connectOver(server.channel, { protocolVersion: '2025-11-25', capabilities, onSpawn });
    };
    gateway = new Gateway({ upstreams: [['s', ENTRY]], open: opener, shared: true });
    return { sessions: new GatewaySessions(gateway), servers, asked, opened: () => opened };
  }

  /** A session on `view`: what it received, and its answers by id. */
  function session(view: GatewayView) {
    const got: Json[] = [];
    view.on('message', (msg: Json) => got.push(msg));
    const answer = (id: unknown): Promise<Json> =>
      within(5000, `answer ${String(id)}`, () => got.find((m) => m.id === id && m.method === undefined), 5);
    const init = async (capabilities: Json = {}): Promise<void> => {
      await view.send({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 't', version: '1' } },
      });
      await answer(0);
      await view.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    };
    return { got, answer, init };
  }

  it('keeps the same ids of two sessions apart, each answer to its own session, on one server', async () => {
    const { sessions, opened, asked } = shared((q) => q.answer({ content: [{ type: 'text', text: String((q.params.arguments as Json).who) }] }));
    const viewA = sessions.open('a', alice);
    const viewB = sessions.open('b', bob);
    const sa = session(viewA);
    const sb = session(viewB);
    await sa.init();
    await sb.init();
    await viewA.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { who: 'alice' } } });
    await viewB.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { who: 'bob' } } });
    expect(((await sa.answer(1)).result as Json).content).to.deep.equal([{ type: 'text', text: 'alice' }]);
    expect(((await sb.answer(1)).result as Json).content).to.deep.equal([{ type: 'text', text: 'bob' }]);
    expect(sa.got.filter((m) => m.id === 1)).to.have.length(1);
    expect(opened(), 'one server for every session').to.equal(1);
    expect(asked.filter((q) => q.method === 'tools/call')).to.have.length(2);
  });

  it("gives a server's question to the session whose call asked, only when it declared it can answer", async () => {
    let n = 0;
    const { sessions, servers } = shared((q, server) => {
      const id = `q${++n}`;
      server.say({ jsonrpc: '2.0', id, method: 'elicitation/create', params: { message: 'sure?', requestedSchema: { type: 'object' } } });
      void within(5000, 'the answer', () => server.answers.find((m) => m.id === id)).then((m) =>
        q.answer({ content: [{ type: 'text', text: JSON.stringify(m.result ?? m.error) }] }),
      );
    });
    const withIt = sessions.open('a', alice);
    const a = session(withIt);
    await a.init({ elicitation: {} });
    const without = sessions.open('b', bob);
    const b = session(without);
    await b.init({});
    withIt.on('message', (msg: Json) => {
      if (msg.method === 'elicitation/create') void withIt.send({ jsonrpc: '2.0', id: msg.id, result: { action: 'accept', content: {} } });
    });
    await withIt.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask', arguments: {} } });
    expect(JSON.parse((((await a.answer(1)).result as Json).content as Array<{ text: string }>)[0]!.text)).to.deep.equal({
      action: 'accept',
      content: {},
    });
    await without.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask', arguments: {} } });
    const refused = JSON.parse((((await b.answer(1)).result as Json).content as Array<{ text: string }>)[0]!.text) as Json;
    expect(refused).to.deep.include({ message: 'the client did not declare elicitation' });
    expect(b.got.some((m) => m.method === 'elicitation/create')).to.equal(false);
    expect(servers).to.have.length(1);
  });

  it('subscribes a resource at its server once for every session, updates only those that subscribed, and the last to leave unsubscribes', async () => {
    const { sessions, servers, asked } = shared((q) =>
      q.answer(q.method === 'resources/list' ? { resources: [{ uri: 'file:///r', name: 'r' }] } : {}),
    );
    const [va, vb, vc] = ['a', 'b', 'c'].map((name) => sessions.open(name, undefined)) as [GatewayView, GatewayView, GatewayView];
    const [a, b, c] = [va, vb, vc].map(session);
    for (const s of [a!, b!, c!]) await s.init();
    await va.send({ jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'file:///r' } });
    await a!.answer(1);
    await vb.send({ jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'file:///r' } });
    expect((await b!.answer(1)).result).to.deep.equal({});
    expect(
      asked.filter((q) => q.method === 'resources/subscribe'),
      'once at the server',
    ).to.have.length(1);
    servers[0]!.say({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///r' } });
    await within(5000, 'the update at b', () => b!.got.find((m) => m.method === 'notifications/resources/updated'));
    expect(a!.got.some((m) => m.method === 'notifications/resources/updated')).to.equal(true);
    expect(
      c!.got.some((m) => m.method === 'notifications/resources/updated'),
      'c did not subscribe',
    ).to.equal(false);
    await va.send({ jsonrpc: '2.0', id: 2, method: 'resources/unsubscribe', params: { uri: 'file:///r' } });
    await a!.answer(2);
    expect(
      asked.some((q) => q.method === 'resources/unsubscribe'),
      'b still wants it',
    ).to.equal(false);
    await vb.close();
    await within(5000, 'the unsubscribe at the server', () => asked.find((q) => q.method === 'resources/unsubscribe'));
  });

  it('sets the server to the most verbose level any session asked, and gives each session only what it asked', async () => {
    const { sessions, servers, asked } = shared((q, server) => {
      if (q.method !== 'tools/call') return q.answer({});
      for (const level of ['debug', 'warning']) server.say({ jsonrpc: '2.0', method: 'notifications/message', params: { level, data: level } });
      setTimeout(() => q.answer({ content: [] }), 20);
    });
    const quiet = sessions.open('quiet', alice);
    const loud = sessions.open('loud', alice);
    const q = session(quiet);
    const l = session(loud);
    await q.init();
    await l.init();
    await quiet.send({ jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'warning' } });
    await q.answer(1);
    await loud.send({ jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'debug' } });
    await l.answer(1);
    expect(asked.filter((x) => x.method === 'logging/setLevel').map((x) => x.params.level)).to.deep.equal(['warning', 'debug']);
    await quiet.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'talk', arguments: {} } });
    await q.answer(2);
    expect(q.got.filter((m) => m.method === 'notifications/message').map((m) => (m.params as Json).data)).to.deep.equal(['warning']);
    expect(servers).to.have.length(1);
  });

  it('cancels a session’s calls at their server when it ends, and the server goes on for the others', async () => {
    const { sessions, servers, asked } = shared((q) => {
      if (q.params.name === 'echo') q.answer({ content: [{ type: 'text', text: 'still here' }] });
    });
    const leaving = sessions.open('leaving', alice);
    const staying = sessions.open('staying', bob);
    const s = session(staying);
    await session(leaving).init();
    await s.init();
    await leaving.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'hang', arguments: {} } });
    await within(5000, 'the hang at the server', () => asked.find((q) => q.params.name === 'hang'));
    await leaving.close();
    await within(5000, 'the cancellation at the server', () => servers[0]!.notified.find((m) => m.method === 'notifications/cancelled'));
    expect(sessions.size).to.equal(1);
    await staying.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } });
    expect((await s.answer(1)).result).to.deep.equal({ content: [{ type: 'text', text: 'still here' }] });
    expect(((await Promise.resolve(leaving.send({ jsonrpc: '2.0', id: 2, method: 'ping' })).catch((e: Error) => e)) as Error).message).to.match(
      /closed/,
    );
  });
});
