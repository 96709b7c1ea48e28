// connect() against servers that misbehave on purpose, on 127.0.0.1: bad endpoint events, endless error bodies,
// DELETEs and requests never answered, streams of comments only, floods of event ids, absurd retry: values.
// The process must survive each, within bounds of time and memory, and print no configured secret.
import type http from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import type { ConfigError } from '../../lib/client/config.js';
import { connect } from '../../lib/client/connect.js';
import type { ConnectionError } from '../../lib/client/errors.js';
import { MAX_TIMER_MS, MIN_RETRY_MS, RecentIds, reconnectWait } from '../../lib/client/remote.js';
import { hostile, json, legacyHttp } from '../helpers/hostile-http.js';
import { rejection } from '../helpers/rejection.js';
import { until } from '../helpers/poll.js';

const SECRET = 'sk-live-0123456789abcdef';

function gc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

describe('connect() against hostile servers', () => {
  let server: Awaited<ReturnType<typeof hostile>> | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('fails the connection, never the process, on a legacy endpoint event that is not a URL, and prints no query', async () => {
    server = await hostile((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: endpoint\ndata: http://[::1\n\n');
    });
    const err = await rejection<ConnectionError>(connect({ type: 'sse', url: `${server.url}/sse?key=${SECRET}` }, { timeoutMs: 2000 }));
    expect(err.code).to.equal('INVALID_RESPONSE');
    expect(err.message).to.include('not a URL');
    expect(`${err.message} ${err.stack}`).not.to.include(SECRET);
  });

  it('waits for the legacy endpoint event no longer than timeoutMs, against a server that sends only comments', async () => {
    let timer: NodeJS.Timeout | undefined;
    server = await hostile((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      timer = setInterval(() => res.write(': still here\n\n'), 20);
      res.on('close', () => clearInterval(timer));
    });
    const started = Date.now();
    const err = await rejection<ConnectionError>(connect({ type: 'sse', url: `${server.url}/sse` }, { timeoutMs: 300 }));
    expect(err.code).to.equal('TIMEOUT');
    expect(Date.now() - started).to.be.below(1500);
    clearInterval(timer);
  });

  it('reads no more than a preview of a legacy SSE error body, however long the server makes it', async () => {
    let sent = 0;
    server = await hostile((req, res) => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return void res.write('event: endpoint\ndata: /messages\n\n');
      }
      // 400 MiB of error body, written as fast as the client takes it.
      res.writeHead(500, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      const more = (): void => {
        while (sent < 400 && !res.destroyed) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
    gc();
    const before = process.memoryUsage().rss;
    const err = await rejection<ConnectionError>(connect({ type: 'sse', url: `${server.url}/sse` }, { timeoutMs: 5000 }));
    const grown = process.memoryUsage().rss - before;
    expect(err.code).to.equal('HTTP_STATUS');
    expect(err.message.length).to.be.below(1000);
    expect(sent, 'MiB the server could send').to.be.below(100);
    expect(grown).to.be.below(64 * 1024 * 1024);
  });

  it('closes within a bound when the server never answers the DELETE that ends the session', async () => {
    server = await hostile(legacyHttp(() => undefined, undefined, { toDelete: true }));
    const c = await connect({ type: 'http', url: `${server.url}/mcp` }, { timeoutMs: 2000 });
    const started = Date.now();
    await c.close();
    expect(Date.now() - started).to.be.below(3000);
  });

  it('gives the socket back when a request times out: 64 timed-out calls leave the connection usable', async () => {
    const open = new Set<http.IncomingMessage>();
    server = await hostile(
      legacyHttp((req) => {
        // tools/call is never answered; its request stays open until the client gives it up.
        open.add(req);
        req.socket.once('close', () => open.delete(req));
      }),
    );
    const c = await connect({ type: 'http', url: `${server.url}/mcp` }, { timeoutMs: 2000 });
    try {
      const calls = Array.from({ length: 64 }, (_, i) => rejection<ConnectionError>(c.request('tools/call', { name: `t${i}` }, { timeoutMs: 200 })));
      for (const err of await Promise.all(calls)) expect(err.code).to.equal('TIMEOUT');
      expect(await c.request('ping', undefined, { timeoutMs: 2000 })).to.deep.equal({});
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(open.size, 'requests the server still holds open').to.equal(0);
    } finally {
      await c.close();
    }
  });

  it('keeps a bounded window of event ids on a long GET stream, not every id with the text it came in', async function () {
    this.timeout(60_000);
    const events = 60_000;
    const pad = 'p'.repeat(2048);
    let written = 0;
    let getStream: http.ServerResponse | undefined;
    server = await hostile(
      legacyHttp(
        () => undefined,
        (_req, res) => {
          getStream = res;
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const more = (): void => {
            while (written < events && !res.destroyed) {
              written++;
              const id = `${written.toString(16).padStart(8, '0')}-0000-4000-8000-${'0'.repeat(12)}`;
              const event = `id: ${id}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${pad}"}}\n\n`;
              if (!res.write(event)) return void res.once('drain', more);
            }
          };
          more();
        },
      ),
    );
    const c = await connect({ type: 'http', url: `${server.url}/mcp` }, { timeoutMs: 2000 });
    try {
      let received = 0;
      c.onNotification('notifications/message', () => received++);
      gc();
      const before = process.memoryUsage().heapUsed;
      await until(20000, 'every event received', () => received >= events, 10);
      expect(received).to.equal(events);
      gc();
      const grown = process.memoryUsage().heapUsed - before;
      // Every id kept with its event's text would be about 2 KiB an event: 120 MiB here.
      expect(grown, 'heap growth after GC').to.be.below(16 * 1024 * 1024);
    } finally {
      getStream?.destroy();
      await c.close();
    }
  });

  it('keeps the most recent event ids, a bounded number, each delivered once', () => {
    const ids = new RecentIds(3);
    expect(['a', 'b', 'c'].map((id) => ids.add(id))).to.deep.equal([true, true, true]);
    expect(ids.add('b')).to.equal(false);
    expect(ids.add('d')).to.equal(true);
    expect(ids.size).to.equal(3);
    // 'a' fell out of the window; 'b', 'c' and 'd' are still in it.
    expect(['a', 'c', 'd'].map((id) => ids.add(id))).to.deep.equal([true, false, false]);
  });

  it("clamps every reconnection wait between a floor and the timer maximum, whatever the server's retry: says", () => {
    const policy = { initialDelayMs: 1000, maxDelayMs: 30_000, factor: 2, maxAttempts: 8 };
    expect(reconnectWait(policy, 0, 0)).to.be.at.least(MIN_RETRY_MS);
    expect(reconnectWait(policy, 0, 3)).to.be.at.least(MIN_RETRY_MS);
    for (const retry of [2 ** 31, 2 ** 40, Number.MAX_SAFE_INTEGER, Number.POSITIVE_INFINITY]) {
      const wait = reconnectWait(policy, retry, 2);
      expect(wait, String(retry)).to.be.at.most(MAX_TIMER_MS).and.at.least(30_000);
    }
    expect(reconnectWait({ ...policy, initialDelayMs: 10 }, undefined, 0)).to.be.within(10, 12);
  });

  it('connects to an entry with a url and no type over Streamable HTTP, and refuses one with neither', async () => {
    server = await hostile(legacyHttp((_req, res) => json(res, { jsonrpc: '2.0', id: 0, result: {} })));
    const c = await connect({ url: `${server.url}/mcp` } as never, { timeoutMs: 2000 });
    try {
      expect(await c.request('ping')).to.deep.equal({});
    } finally {
      await c.close();
    }
    const err = await rejection<ConfigError>(connect({} as never));
    expect(err.name).to.equal('ConfigError');
    expect(err.message).to.include('neither a command');
  });

  it('keeps configured header and query values out of errors, traces and reports, where the server echoes them', async () => {
    const header = 'plainvalue-778899';
    const query = 'qvalue-445566';
    const echo = (req: http.IncomingMessage): string => `${req.url} ${JSON.stringify(req.headers)}`;
    server = await hostile(
      legacyHttp((req, res, body) => {
        const msg = JSON.parse(body) as { id: number; params: { name: string } };
        if (msg.params.name === 'status') return void res.writeHead(500, { 'content-type': 'text/plain' }).end(`failed for ${echo(req)}`);
        if (msg.params.name === 'rpc')
          return json(res, { jsonrpc: '2.0', id: msg.id, error: { code: -32000, message: `no access for ${echo(req)}` } });
        // An event stream: a bad frame quoting the request, then the answer quoting it too.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`event: message\ndata: {"not json ${echo(req).replaceAll('"', "'")}\n\n`);
        res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { seen: echo(req) } })}\n\n`);
      }),
    );
    const c = await connect({ type: 'http', url: `${server.url}/mcp?tenant=${query}`, headers: { 'X-Custom-Key': header } }, { timeoutMs: 2000 });
    const shown: string[] = [];
    c.on('frame', (t: { preview: string }) => shown.push(t.preview));
    c.on('invalid', (err: Error & { preview: string }) => shown.push(err.message, err.preview));
    try {
      shown.push((await rejection(c.request('tools/call', { name: 'status' }))).message);
      shown.push((await rejection(c.request('tools/call', { name: 'rpc' }))).message);
      // The result is the server's data, handed over as it came; what is shown of it is not.
      const result = (await c.request('tools/call', { name: 'stream' })) as { seen: string };
      expect(result.seen).to.include(header).and.include(query);
    } finally {
      await c.close();
    }
    expect(shown.filter((t) => t.includes('[REDACTED]')).length).to.be.at.least(4);
    for (const text of shown) expect(text).not.to.include(header).and.not.to.include(query);
  });
});
