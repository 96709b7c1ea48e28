// serve against clients that misbehave on purpose: pipelined requests, slow and stalled readers, bodies that
// are not UTF-8 or too large, secrets in request lines. The process must survive each, and go on serving.
import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import type { ServeHandle } from '../../lib/serve/index.js';
import { Guard } from '../../lib/serve/http/guard.js';
import { MCP_HEADERS, openStream, postUnread, rawRequest, rawTarget } from '../helpers/raw-http.js';
import { cli } from '../helpers/run.js';
import { floodUnread, INIT, rawSession, STEPS, serveProcess, served } from '../helpers/served.js';

const STEPS_COMMAND = [STEPS.command, ...STEPS.args];

const call = (id: number, name: string, args: Record<string, unknown>): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

describe('serve: clients that try to kill, freeze or read it', () => {
  let bridge: ServeHandle | undefined;
  let log: string[];
  afterEach(async () => {
    await bridge?.close();
    bridge = undefined;
  });

  async function stillServes(): Promise<void> {
    const c = await connect({ type: 'http', url: bridge!.url! });
    try {
      expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'still here' } })).to.deep.include({
        content: [{ type: 'text', text: 'still here' }],
      });
    } finally {
      await c.close();
    }
  }

  it('survives a GET stream and a POST pipelined on one connection, keep-alives running', async () => {
    ({ bridge, log } = await served(STEPS, { keepaliveMs: 5 }));
    const session = await rawSession(bridge.url!);
    const port = bridge.port!;
    const common = `Host: 127.0.0.1:${port}\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: ${session}\r\n`;
    const body = call(2, 'echo', { text: 'pipelined' });
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8').on('data', (d: string) => (received += d));
    socket.write(
      `GET /mcp HTTP/1.1\r\n${common}\r\n` +
        `POST /mcp HTTP/1.1\r\n${common}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await sleep(300);
    socket.destroy();
    await sleep(50);
    expect(received).to.include(': keepalive');
    // The session's GET stream went with the connection: a new one may open.
    const again = await openStream(bridge.url!, { headers: { accept: 'text/event-stream', 'mcp-session-id': session } });
    expect(again.status).to.equal(200);
    again.drop();
    await stillServes();
  });

  it('survives a client that reads a large answer slowly, keep-alives running', async () => {
    ({ bridge, log } = await served(STEPS, { keepaliveMs: 1, maxMessageBytes: 64 * 1024 * 1024 }));
    const session = await rawSession(bridge.url!);
    const text = 'y'.repeat(24_000_000);
    const res = await postUnread(bridge.url!, session, call(2, 'echo', { text }));
    await sleep(300);
    let received = '';
    res.setEncoding('utf8');
    for await (const chunk of res as AsyncIterable<string>) received += chunk;
    const answer = JSON.parse(/^data: (\{.*)$/m.exec(received)![1]!);
    expect(answer).to.deep.equal({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text }] } });
    await stillServes();
  });

  it("stops reading a session's server while its client does not read, and delivers everything once it does", async () => {
    ({ bridge, log } = await served(STEPS));
    // Each hold while the client does not read, and each drain, must leave no listener behind on the response.
    const leaks: string[] = [];
    const onWarning = (w: Error): void => void (w.name === 'MaxListenersExceededWarning' && leaks.push(w.message));
    process.on('warning', onWarning);
    await floodUnread(bridge.url!, 'flood', log);
    await stillServes();
    process.off('warning', onWarning);
    expect(leaks).to.deep.equal([]);
  });

  it('refuses a body that is not UTF-8 with 400 and a parse error, where a replacement character would merge keys', async () => {
    ({ bridge, log } = await served(STEPS));
    const session = await rawSession(bridge.url!);
    const body = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","'),
      Buffer.from([0xff]),
      Buffer.from('":1,"'),
      Buffer.from([0xfe]),
      Buffer.from('":2}}}'),
    ]);
    const res = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, 'mcp-session-id': session }, body });
    expect(res.status).to.equal(400);
    expect(JSON.parse(res.body).error.code).to.equal(-32700);
    expect(log.some((l) => l.startsWith('400 POST /mcp') && l.includes('UTF-8'))).to.equal(true);
    await stillServes();
  });

  it('answers an oversized body with a 413 the client can read while it is still sending', async () => {
    ({ bridge, log } = await served(STEPS, { maxMessageBytes: 1000 }));
    // A client that sends its whole body before it reads (as most do): a reset while it sends would drop the
    // answer from its receive buffer unread.
    const size = 4 * 1024 * 1024;
    const socket = net.connect(bridge.port!, '127.0.0.1');
    socket.pause();
    socket.on('error', () => undefined);
    const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${bridge.port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${size}\r\n\r\n`;
    socket.write(head);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    for (let sent = 0; sent < size && !socket.destroyed; sent += chunk.length) {
      if (!socket.write(chunk)) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await sleep(200);
    let received = '';
    socket.setEncoding('utf8').on('data', (d: string) => (received += d));
    const error = await new Promise<Error | undefined>((resolve) => {
      socket.once('error', resolve);
      socket.once('close', () => resolve(undefined));
      socket.resume();
    });
    expect(received.split('\r\n')[0], error?.message).to.equal('HTTP/1.1 413 Payload Too Large');
    await stillServes();
  });

  it('logs request paths without their query, whole session ids or the token', async () => {
    const token = 'sekrit-token-4242';
    ({ bridge, log } = await served(STEPS, { token }));
    const auth = { authorization: `Bearer ${token}` };
    const stream = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get(bridge!.url!.replace('/mcp', '/sse'), { headers: { accept: 'text/event-stream', ...auth }, agent: false }, resolve);
      req.on('error', reject);
    });
    const endpoint = await new Promise<string>((resolve) => {
      stream.setEncoding('utf8').on('data', (d: string) => {
        const match = /data: (\S+)/.exec(d);
        if (match !== null) resolve(match[1]!);
      });
    });
    const sessionId = new URL(endpoint, 'http://x').searchParams.get('sessionId')!;
    const base = bridge.url!.replace('/mcp', '');
    // A wrong Content-Type on the session's endpoint, a token in the query of a refused request, a wrong path.
    await rawRequest(`${base}${endpoint}`, { method: 'POST', headers: { 'content-type': 'text/plain', ...auth }, body: '{}' });
    await rawRequest(`${base}/mcp?key=${token}`, { method: 'POST', headers: MCP_HEADERS, body: '{}' });
    await rawRequest(`${base}/nowhere?sessionId=${sessionId}&key=${token}`, { headers: auth });
    stream.destroy();
    await sleep(50);
    const refusals = log.filter((l) => /^\d{3} /.test(l));
    expect(refusals).to.have.length(3);
    expect(refusals.join('\n')).to.include('415 POST /messages:').and.include('401 POST /mcp:').and.include('404 GET /nowhere:');
    for (const line of log) {
      expect(line).not.to.include(sessionId);
      expect(line).not.to.include(token);
    }
    expect(log.join('\n')).to.include(sessionId.slice(0, 8));
  });

  it('answers the requests in flight at once when the server of a legacy /sse session dies, as /mcp does', async () => {
    ({ bridge, log } = await served(STEPS));
    const sse = bridge.url!.replace('/mcp', '/sse');
    const stream = await openStream(sse, { headers: { accept: 'text/event-stream' } });
    await stream.until(1);
    const endpoint = new URL(stream.events[0]!.data, sse).href;
    const posted = await rawRequest(endpoint, { method: 'POST', headers: MCP_HEADERS, body: call(7, 'exit', {}) });
    expect(posted.status).to.equal(202);
    await stream.ended;
    const answers = stream.events.slice(1).map((e) => JSON.parse(e.data));
    expect(answers).to.have.length(1);
    expect(answers[0]).to.deep.include({ jsonrpc: '2.0', id: 7 });
    expect(answers[0].error.code).to.equal(-32000);
    expect(answers[0].error.message).to.include('exited with code 3');
  });

  it('primes a GET stream before the messages queued for it, and sends the headers of a resume with nothing to replay at once', async () => {
    ({ bridge, log } = await served(STEPS));
    const session = await rawSession(bridge.url!);
    // `later` answers, then logs a message with no request in flight: it waits for the session's GET stream.
    const answered = await rawRequest(bridge.url!, {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'mcp-session-id': session },
      body: call(2, 'later', { text: 'queued' }),
    });
    expect(answered.status).to.equal(200);
    await sleep(100);
    const get = { accept: 'text/event-stream', 'mcp-session-id': session };
    const first = await openStream(bridge.url!, { headers: get });
    await first.until(2);
    const [priming, queued] = first.events;
    expect(priming!.data).to.equal('');
    expect(JSON.parse(queued!.data)).to.deep.include({ method: 'notifications/message' });
    expect(priming!.id).to.not.equal(queued!.id);
    first.drop();
    await first.ended;
    // Resumed from the priming id, the queued message comes again.
    const again = await openStream(bridge.url!, { headers: { ...get, 'last-event-id': priming!.id! } });
    await again.until(1);
    expect(again.events[0]!.id).to.equal(queued!.id);
    again.drop();
    await again.ended;
    // Resumed after the last event: nothing to replay, and the headers come now, not with the next keep-alive.
    const started = Date.now();
    const empty = await openStream(bridge.url!, { headers: { ...get, 'last-event-id': queued!.id! } });
    expect(empty.status).to.equal(200);
    expect(Date.now() - started).to.be.below(2000);
    empty.drop();
  });

  it('bounds the requests in flight of a legacy /sse session as it does on /mcp (429 past the limit)', async () => {
    ({ bridge, log } = await served(STEPS, { maxPendingPerSession: 2 }));
    const sse = bridge.url!.replace('/mcp', '/sse');
    const stream = await openStream(sse, { headers: { accept: 'text/event-stream' } });
    await stream.until(1);
    const endpoint = new URL(stream.events[0]!.data, sse).href;
    const slow = (id: number) => rawRequest(endpoint, { method: 'POST', headers: MCP_HEADERS, body: call(id, 'steps', { n: 1, ms: 400 }) });
    expect((await slow(1)).status).to.equal(202);
    expect((await slow(2)).status).to.equal(202);
    expect((await slow(3)).status).to.equal(429);
    // Once answered, there is room again.
    await stream.until(3);
    expect((await slow(4)).status).to.equal(202);
    stream.drop();
  });
});

describe('serve: request-targets and origins a page can send', function () {
  this.timeout(20_000);

  it('answers 400 to request-targets that are not a path (GET //, //host/mcp, http://[) before any check, and goes on serving', async () => {
    const proc = await serveProcess(['--port', '0', '--', ...STEPS_COMMAND]);
    try {
      const port = Number(new URL(proc.url!).port);
      for (const target of ['//', '//evil.example/mcp', '/mcp#x']) {
        const answer = await rawTarget(port, target, { origin: 'https://evil.example' });
        expect(answer.split('\r\n')[0], target).to.equal('HTTP/1.1 400 Bad Request');
      }
      // One the HTTP parser itself may refuse: either way, an answer and no crash.
      expect(await rawTarget(port, 'http://[')).to.match(/^HTTP\/1\.1 400 /);
      expect(proc.proc.exitCode).to.equal(null);
      const c = await connect({ type: 'http', url: proc.url! });
      try {
        expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'alive' } })).to.deep.include({
          content: [{ type: 'text', text: 'alive' }],
        });
      } finally {
        await c.close();
      }
      expect(proc.stderr()).to.match(/400 GET \(not a path\): the request-target is not a path/);
    } finally {
      proc.proc.kill('SIGTERM');
      await proc.exited;
    }
  });

  it('never admits Origin: null, and refuses an opaque origin in allowOrigins and --allow-origin', async () => {
    expect(() => new Guard({ host: '127.0.0.1', port: 1, allowHosts: [], allowOrigins: ['file:///home/me/app.html'], token: undefined })).to.throw(
      TypeError,
      /opaque origin/,
    );
    const guard = new Guard({ host: '127.0.0.1', port: 1, allowHosts: [], allowOrigins: ['https://app.example'], token: undefined });
    expect(guard.originAllowed('null')).to.equal(false);
    expect(guard.originAllowed('https://app.example')).to.equal(true);
    const { bridge } = await served(STEPS, { allowOrigins: ['https://app.example'] });
    try {
      const refused = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, origin: 'null' }, body: INIT });
      expect(refused.status).to.equal(403);
      expect(refused.headers['access-control-allow-origin']).to.equal(undefined);
    } finally {
      await bridge.close();
    }
    const refusedFlag = await cli(['serve', '--allow-origin', 'file:///home/me/app.html', '--', ...STEPS_COMMAND]);
    expect(refusedFlag.code).to.equal(2);
    expect(refusedFlag.stderr).to.match(/opaque origin \("null"\), which any page can send/);
  });
});
