// bridge() as a library: a host's frames on a stream in, the server's out, against real servers on 127.0.0.1, in
// this process (no child, no stdin). The command (`mcp-frame bridge`) is tested in test/cli/bridge.test.ts.
import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { bridge } from '../../lib/serve/index.js';
import { FrameDecoder, frame } from '../../lib/index.js';
import { sdk2Http } from '../helpers/sdk2.js';
import { sdkServer } from '../helpers/sdk-http-server.js';
import { sseServer } from '../helpers/sse-server.js';

type Json = Record<string, unknown>;

/** A host in this process: what it writes goes to bridge(); `next()` resolves with the next message it gets. */
function host(): { input: PassThrough; output: PassThrough; send(msg: Json): void; next(): Promise<Json>; end(): void } {
  const input = new PassThrough();
  const output = new PassThrough();
  const got: Json[] = [];
  const waiting: Array<(msg: Json) => void> = [];
  output.pipe(new FrameDecoder()).on('data', (msg: Json) => {
    const wake = waiting.shift();
    if (wake === undefined) got.push(msg);
    else wake(msg);
  });
  return {
    input,
    output,
    send: (msg) => input.write(frame(msg)),
    next: () => {
      const first = got.shift();
      return first === undefined ? new Promise((resolve) => waiting.push(resolve)) : Promise.resolve(first);
    },
    end: () => input.end(),
  };
}

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'h', version: '1' } },
};

describe('bridge() in the library', function () {
  this.timeout(30_000);

  it('carries a legacy host to a Streamable HTTP server and back, and resolves when the host ends', async () => {
    const server = await sdkServer();
    const h = host();
    const log: string[] = [];
    const done = bridge({ type: 'http', url: server.url }, { input: h.input, output: h.output, log: (l) => log.push(l) });
    try {
      h.send(INIT);
      expect(((await h.next()).result as Json).serverInfo).to.deep.include({ name: 'sdk-http' });
      h.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      h.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'in process ✓' } } });
      expect(await h.next()).to.deep.include({ id: 2, result: { content: [{ type: 'text', text: 'in process ✓' }] } });
      h.end();
      expect(await done).to.deep.equal({ gaveUp: false });
    } finally {
      await server.close();
    }
  });

  it('falls back to the HTTP+SSE transport for a server that refuses Streamable HTTP, and says so', async () => {
    const server = await sseServer();
    const h = host();
    const log: string[] = [];
    const done = bridge(
      { type: 'http', url: `${server.url.replace(/\/sse$/, '')}/sse` },
      { input: h.input, output: h.output, log: (l) => log.push(l) },
    );
    try {
      h.send(INIT);
      expect(((await h.next()).result as Json).serverInfo).to.deep.include({ name: 'sdk-sse' });
      h.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      h.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'over SSE' } } });
      expect(await h.next()).to.deep.include({ id: 2, result: { content: [{ type: 'text', text: 'over SSE' }] } });
      expect(log.some((l) => l.includes('HTTP+SSE transport'))).to.equal(true);
      h.end();
      await done;
    } finally {
      await server.close();
    }
  });

  it('translates for a legacy host in front of a modern-only server', async () => {
    const server = await sdk2Http('modern');
    const h = host();
    const log: string[] = [];
    const done = bridge({ type: 'http', url: server.url }, { input: h.input, output: h.output, log: (l) => log.push(l) });
    try {
      h.send(INIT);
      const init = (await h.next()).result as Json;
      expect(init.protocolVersion).to.equal('2025-11-25');
      expect(init.serverInfo).to.deep.include({ name: 'sdk2-modern' });
      h.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      h.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'translated' } } });
      expect(((await h.next()).result as Json).content).to.deep.equal([{ type: 'text', text: 'translated' }]);
      expect(log.some((l) => l.includes('translating'))).to.equal(true);
      h.end();
      await done;
    } finally {
      await server.close();
    }
  });

  it("ends with gaveUp when the server is gone for good: the host's input is read no more and its output ends", async () => {
    const server = await sdkServer();
    const h = host();
    const done = bridge(
      { type: 'http', url: server.url },
      { input: h.input, output: h.output, log: () => undefined, reconnect: { initialDelayMs: 10, maxAttempts: 2 } },
    );
    h.send(INIT);
    await h.next();
    h.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await new Promise((r) => setTimeout(r, 100));
    const ended = new Promise((resolve) => h.output.once('end', resolve));
    h.output.resume();
    await server.close();
    expect(await done).to.deep.equal({ gaveUp: true });
    await ended;
    expect(h.input.destroyed).to.equal(true);
  });
});
