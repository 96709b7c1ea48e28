import { expect } from 'chai';
import { PassThrough, Writable } from 'node:stream';
import { type Channel, StreamChannel } from '../../lib/client/channel.js';
import { type Connection, connectOver, type FrameTrace, RpcError } from '../../lib/client/connection.js';
import type { ConnectionError } from '../../lib/client/errors.js';
import { StdioChannel } from '../../lib/client/stdio.js';
import { FrameError, preview } from '../../lib/errors.js';
import { ROOT } from '../helpers/fixtures.js';
import { demoChannel } from '../helpers/memory-server.js';
import { rejection } from '../helpers/rejection.js';

async function childProcessDemo(): Promise<Channel> {
  const channel = new StdioChannel({ command: process.execPath, args: [`${ROOT}dist/examples/server.js`] }, { name: 'demo' });
  await channel.started;
  return channel;
}

// The same session over two channels: the session code cannot tell which carries it.
for (const [kind, open] of [
  ['a child process', childProcessDemo],
  ['in-memory streams', async () => demoChannel()],
] as const) {
  describe(`a Connection over ${kind}`, () => {
    let c: Connection;
    beforeEach(async () => {
      c = await connectOver(await open());
    });
    afterEach(async () => {
      await c.close();
    });

    it('probes the era, finds a legacy server, and performs the handshake', () => {
      expect(c.era).to.equal('legacy');
      expect(c.protocolVersion).to.equal('2025-06-18');
      expect(c.initializeResult).to.deep.include({ protocolVersion: '2025-06-18', serverInfo: { name: 'mcp-frame-demo', version: '0.1.0' } });
    });

    it('calls a tool and gets multibyte text back exactly', async () => {
      const text = 'ünïcödé \u2028 emoji 👩‍👩‍👧, "quotes" and \\ backslash\nnewline';
      expect(await c.request('tools/call', { name: 'echo', arguments: { text } })).to.deep.equal({ content: [{ type: 'text', text }] });
    });

    it('rejects an error response with RpcError', async () => {
      const err = (await rejection(c.request('no/such/method'))) as RpcError;
      expect(err).to.be.instanceOf(RpcError);
      expect(err.code).to.equal(-32601);
    });

    it('answers 2,000 concurrent requests, each with its own result, with no listener warning', async () => {
      const warnings: Error[] = [];
      const onWarning = (w: Error): void => void warnings.push(w);
      process.on('warning', onWarning);
      try {
        const sums = await Promise.all(Array.from({ length: 2000 }, (_, i) => c.request('tools/call', { name: 'add', arguments: { a: i, b: 1 } })));
        expect(sums.map((r) => (r as { structuredContent: { sum: number } }).structuredContent.sum)).to.deep.equal(
          Array.from({ length: 2000 }, (_, i) => i + 1),
        );
        await new Promise((resolve) => setImmediate(resolve));
        expect(warnings.map((w) => w.name)).to.deep.equal([]);
      } finally {
        process.off('warning', onWarning);
      }
    });

    it('answers 10,000 concurrent requests: its own waiting requests never stop it reading the answers', async () => {
      // The server stops reading while its output is not read; pausing our reads on our own queue deadlocked.
      const results = await Promise.all(
        Array.from({ length: 10_000 }, (_, i) => c.request('tools/call', { name: 'echo', arguments: { text: `m${i}` } }, { timeoutMs: 20_000 })),
      );
      expect(results.map((r) => (r as { content: Array<{ text: string }> }).content[0]!.text)).to.deep.equal(
        Array.from({ length: 10_000 }, (_, i) => `m${i}`),
      );
    });

    it('traces the frames as they crossed the wire', async () => {
      const frames: FrameTrace[] = [];
      c.on('frame', (f: FrameTrace) => frames.push(f));
      await c.request('tools/call', { name: 'echo', arguments: { text: 'é' } });
      // Ids 1 and 2 went to the era probe and initialize.
      const sent = `${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'é' } } })}\n`;
      const received = JSON.stringify({ jsonrpc: '2.0', id: 3, result: { content: [{ type: 'text', text: 'é' }] } });
      expect(frames).to.deep.equal([
        { direction: 'send', bytes: Buffer.byteLength(sent), preview: preview(sent) },
        { direction: 'receive', bytes: Buffer.byteLength(received), preview: preview(received) },
      ]);
    });

    it('rejects a message with no JSON form at once, and goes on', async () => {
      const err = await rejection(c.request('tools/call', { name: 'add', arguments: { a: 1n, b: 2 } }));
      expect(err).to.be.instanceOf(FrameError);
      expect((err as FrameError).code).to.equal('NOT_SERIALIZABLE');
      expect(await c.request('ping')).to.deep.equal({});
    });

    it('takes timeoutMs: Infinity as no timeout, and refuses a timeout a timer cannot wait', async () => {
      expect(await c.request('ping', {}, { timeoutMs: Number.POSITIVE_INFINITY })).to.deep.equal({});
      const err = await rejection(c.request('ping', {}, { timeoutMs: 2 ** 31 }));
      expect(err).to.be.instanceOf(RangeError);
      expect(err.message).to.match(/timeoutMs/);
    });

    it('rejects what is pending with CLOSED when closed', async () => {
      const failed = rejection(c.request('tools/call', { name: 'blob', arguments: { bytes: 8 * 1024 * 1024 } }));
      await c.close();
      const err = (await failed) as ConnectionError;
      expect(err.code).to.equal('CLOSED');
    });
  });
}

describe('StreamChannel', () => {
  it('keeps one drain listener however many sends wait, and rejects them all at once on close', async () => {
    // A peer that never reads: every write waits.
    const deaf = new Writable({ highWaterMark: 16, write: () => undefined });
    const channel = new StreamChannel(new PassThrough(), deaf, { name: 'deaf' });
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const sends = Array.from({ length: 20_000 }, (_, i) => channel.send({ jsonrpc: '2.0', method: 'n', params: { i } }));
      expect(deaf.listenerCount('drain')).to.equal(1);
      const started = performance.now();
      await channel.close();
      const results = await Promise.allSettled(sends);
      expect(performance.now() - started).to.be.lessThan(1000);
      expect(results.filter((r) => r.status === 'rejected')).to.have.length(20_000);
      expect((results[1] as PromiseRejectedResult).reason.code).to.equal('CLOSED');
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => w.name)).to.not.include('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('refuses sends past maxQueuedBytes with SEND_QUEUE_FULL', async () => {
    const deaf = new Writable({ highWaterMark: 16, write: () => undefined });
    const channel = new StreamChannel(new PassThrough(), deaf, { maxQueuedBytes: 1000 });
    const sends = Array.from({ length: 40 }, (_, i) => channel.send({ jsonrpc: '2.0', method: 'notifications/x', params: { i } }));
    const settled = await Promise.race([Promise.allSettled(sends.slice(-1)), new Promise((r) => setTimeout(r, 100, 'waiting'))]);
    expect(settled).to.not.equal('waiting');
    const last = (await rejection(sends[39]!)) as ConnectionError;
    expect(last.code).to.equal('SEND_QUEUE_FULL');
    await channel.close();
    await Promise.allSettled(sends);
  });

  it('stops reading a peer that floods requests while it does not read the answers', async () => {
    const input = new PassThrough();
    const deaf = new Writable({ highWaterMark: 1024, write: () => undefined });
    const channel = new StreamChannel(input, deaf, { name: 'flood' });
    // The handshake is answered before the flood starts (a fixed revision: initialize is the first request).
    channel.once('wire', () =>
      setImmediate(() => input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18' } })}\n`)),
    );
    const c = await connectOver(channel, { protocolVersion: '2025-06-18' });
    let answers = 0;
    c.on('frame', (f: FrameTrace) => {
      if (f.direction === 'send') answers++;
    });
    const ping = (i: number): string => `${JSON.stringify({ jsonrpc: '2.0', id: `p${i}`, method: 'ping' })}\n`;
    let accepted = 0;
    for (let i = 0; i < 20_000; i++) {
      if (!input.write(ping(i))) break;
      accepted++;
      if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Without the throttle every ping would be answered into an ever-growing queue.
    expect(answers).to.be.lessThan(1000);
    expect(accepted).to.be.lessThan(20_000);
    await c.close();
  });

  describe('protocol revisions', () => {
    /** A peer that answers initialize with `version`, and anything else with {}. */
    function peer(version: string): { channel: StreamChannel; asked: () => unknown } {
      const toServer = new PassThrough();
      const toClient = new PassThrough();
      let asked: unknown;
      toServer.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString().split('\n').filter(Boolean)) {
          const msg = JSON.parse(line) as { id?: number; method: string; params?: { protocolVersion?: string } };
          if (msg.id === undefined) continue;
          if (msg.method === 'initialize') asked = msg.params?.protocolVersion;
          const result = msg.method === 'initialize' ? { protocolVersion: version, capabilities: {}, serverInfo: { name: 'p', version: '1' } } : {};
          toClient.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result })}\n`);
        }
      });
      return { channel: new StreamChannel(toClient, toServer, { name: 'peer' }), asked: () => asked };
    }

    it('asks for 2025-11-25 and accepts what a server negotiates down to, to 2024-11-05', async () => {
      for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
        const { channel, asked } = peer(version);
        const c = await connectOver(channel);
        expect(asked()).to.equal('2025-11-25');
        expect(c.protocolVersion).to.equal(version);
        await c.close();
      }
    });

    it('refuses a revision it does not speak, naming both sides', async () => {
      const err = (await rejection(connectOver(peer('2023-01-01').channel))) as ConnectionError;
      expect(err.code).to.equal('INVALID_RESPONSE');
      expect(err.message).to.include('2023-01-01').and.to.include('2025-11-25');
    });
  });
});
