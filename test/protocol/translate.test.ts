import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import type { ListenFilter } from '../../lib/protocol/listen.js';
import { RpcError } from '../../lib/protocol/rpc-error.js';
import { LegacyHostSession, type ModernPeer, modernOnlyRefusal } from '../../lib/protocol/translate.js';
import { within } from '../helpers/poll.js';

type Json = Record<string, unknown>;

/** A modern peer in memory: its discover result, its answers by method, and what it was asked. */
class FakePeer extends EventEmitter implements ModernPeer {
  readonly asked: Array<{ method: string; params: unknown }> = [];
  readonly handlers = new Map<string, (params: unknown) => Promise<unknown>>();
  listens: ListenFilter[] = [];
  constructor(
    readonly initializeResult: Json,
    readonly answer: (method: string, params: unknown, signal: AbortSignal) => Promise<unknown>,
  ) {
    super();
  }
  request(method: string, params: unknown, options: { signal: AbortSignal }): Promise<unknown> {
    this.asked.push({ method, params });
    return this.answer(method, params, options.signal);
  }
  onRequest(method: string, handler: (params: unknown) => Promise<unknown>): this {
    this.handlers.set(method, handler);
    return this;
  }
  async listen(filter: ListenFilter): Promise<{ acknowledged: ListenFilter; close(): Promise<void> }> {
    this.listens.push(filter);
    return { acknowledged: { toolsListChanged: filter.toolsListChanged === true }, close: async () => undefined };
  }
}

const DISCOVERED = {
  capabilities: { tools: { listChanged: true }, logging: {} },
  instructions: 'Use the tools.',
  _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'modern-server', version: '2.0' } },
};

describe('protocol/translate: a legacy host in front of a modern-only server', () => {
  it('tells a refusal that names only modern revisions from any other', () => {
    const refused = (supported: unknown) => ({ jsonrpc: '2.0', id: 1, error: { code: -32022, message: 'no', data: { supported } } });
    expect(modernOnlyRefusal(refused(['2026-07-28']))).to.equal(true);
    expect(modernOnlyRefusal(refused(['2026-07-28', '2025-06-18'])), 'a legacy revision is offered too').to.equal(false);
    expect(modernOnlyRefusal(refused([]))).to.equal(false);
    expect(modernOnlyRefusal({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'bad', data: { supported: ['2026-07-28'] } } })).to.equal(
      false,
    );
    expect(modernOnlyRefusal({ jsonrpc: '2.0', id: 1, result: {} })).to.equal(false);
  });

  it("answers the host's initialize from the discover result, in the revision the host asked for when it is one", async () => {
    const peer = new FakePeer(DISCOVERED, async () => ({}));
    const session = new LegacyHostSession(peer, () => undefined, {});
    const result = session.initializeResult('2025-06-18');
    expect(result).to.deep.include({
      protocolVersion: '2025-06-18',
      serverInfo: { name: 'modern-server', version: '2.0' },
      instructions: 'Use the tools.',
    });
    expect(session.initializeResult('1999-01-01').protocolVersion).to.equal('2025-11-25');
    // A list change is advertised only once the server agreed to send it on a listen.
    expect((result.capabilities as Json).tools).to.not.deep.include({ listChanged: true });
    await session.listenAdvertised();
    expect(peer.listens).to.deep.equal([{ toolsListChanged: true }]);
    expect((session.initializeResult('2025-11-25').capabilities as Json).tools).to.deep.include({ listChanged: true });
  });

  it("passes the host's requests on the modern way, and their answers and errors back with the host's ids", async () => {
    const toHost: Json[] = [];
    const peer = new FakePeer(DISCOVERED, async (method) => {
      if (method === 'tools/call') return { content: [{ type: 'text', text: 'ünï ✓' }] };
      throw new RpcError(-32602, 'Unknown tool', { name: 'x' });
    });
    const session = new LegacyHostSession(peer, (msg) => toHost.push(msg), {});
    session.fromHost({ jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'echo' } });
    session.fromHost({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} });
    session.fromHost({ jsonrpc: '2.0', id: 8, method: 'ping' });
    await within(2000, 'three answers', () => (toHost.length >= 3 ? true : undefined), 1);
    expect(toHost).to.deep.include({ jsonrpc: '2.0', id: 8, result: {} });
    expect(toHost).to.deep.include({ jsonrpc: '2.0', id: 'a', result: { content: [{ type: 'text', text: 'ünï ✓' }] } });
    expect(toHost).to.deep.include({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Unknown tool', data: { name: 'x' } } });
    expect(peer.asked.map((a) => a.method)).to.deep.equal(['tools/call', 'tools/list']);
  });

  it('asks the host what the server asks, only of kinds the host declared, and gives up on them when closed', async () => {
    const toHost: Json[] = [];
    const peer = new FakePeer(DISCOVERED, async () => ({}));
    const session = new LegacyHostSession(peer, (msg) => toHost.push(msg), { elicitation: {} });
    expect([...peer.handlers.keys()]).to.deep.equal(['elicitation/create']);
    const answered = peer.handlers.get('elicitation/create')!({ message: 'Deploy?' });
    await within(2000, 'the question at the host', () => toHost[0], 1);
    expect(toHost[0]).to.deep.include({ jsonrpc: '2.0', method: 'elicitation/create', params: { message: 'Deploy?' } });
    session.fromHost({ jsonrpc: '2.0', id: toHost[0]!.id, result: { action: 'accept', content: { ok: true } } });
    expect(await answered).to.deep.equal({ action: 'accept', content: { ok: true } });
    const unanswered = peer.handlers.get('elicitation/create')!({ message: 'Again?' });
    session.close();
    const err = await unanswered.then(
      () => expect.fail('answered after close'),
      (e: Error & { code?: string }) => e,
    );
    expect(err.code).to.equal('CLOSED');
  });

  it('cancels a request at the server when the host cancels it, and answers the host nothing for it', async () => {
    const toHost: Json[] = [];
    let aborted = false;
    const peer = new FakePeer(
      DISCOVERED,
      (_m, _p, signal) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          }),
        ),
    );
    const session = new LegacyHostSession(peer, (msg) => toHost.push(msg), {});
    session.fromHost({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'slow' } });
    session.fromHost({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } });
    await within(2000, 'the abort at the server', () => (aborted ? true : undefined), 1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(toHost).to.deep.equal([]);
  });
});
