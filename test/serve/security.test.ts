import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import type { ServeHandle } from '../../lib/serve/index.js';
import { gone } from '../helpers/processes.js';
import { MCP_HEADERS, openStream, rawRequest } from '../helpers/raw-http.js';
import { INIT, pidsOf, rawSession, STEPS, served } from '../helpers/served.js';

const ECHO = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'ok' } } });

describe('serve: who gets in, and what the bridge refuses', () => {
  let bridge: ServeHandle;
  let log: string[];
  afterEach(() => bridge.close());

  /** A good client still gets through: a whole session, initialize to answer. */
  async function stillServes(headers: Record<string, string> = {}): Promise<void> {
    const c = await connect({ type: 'http', url: bridge.url!, headers });
    try {
      expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'still here' } })).to.deep.include({
        content: [{ type: 'text', text: 'still here' }],
      });
    } finally {
      await c.close();
    }
  }

  it('on every interface, says which Host names it admits, and a refused Host is told of --allow-host', async () => {
    ({ bridge, log } = await served(undefined, { host: '0.0.0.0', token: 'tok-0123456789abcdef' }));
    const admitting = log.find((l) => l.startsWith('admitting Host'));
    expect(admitting).to.include(`127.0.0.1:${bridge.port}`).and.include('--allow-host');
    const foreign = await rawRequest(`http://127.0.0.1:${bridge.port}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, host: `mcp.example.com:${bridge.port}`, authorization: 'Bearer tok-0123456789abcdef' },
      body: INIT,
    });
    expect(foreign.status).to.equal(403);
    expect(foreign.body).to.include('--allow-host');
  });

  it('admits an --allow-host name as a balancer, a Service or an ingress sends it: with no port, :80, :443 or its own; and names the flag for a refused one', async () => {
    ({ bridge, log } = await served(undefined, { allowHosts: ['mcp', 'mcp.default.svc.cluster.local', 'fixed.example:8080'] }));
    const status = async (host: string): Promise<number> =>
      (await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, host }, body: INIT })).status;
    for (const host of ['mcp', 'mcp:80', 'mcp:443', `mcp:${bridge.port}`, 'MCP.default.svc.cluster.local', 'fixed.example:8080'])
      expect(await status(host), host).to.equal(200);
    for (const host of ['mcp:8081', 'fixed.example', 'fixed.example:80', 'other', 'mcpx']) expect(await status(host), host).to.equal(403);
    const refused = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, host: 'gateway.example.com:443' }, body: INIT });
    expect(refused.body).to.include('admit it with --allow-host gateway.example.com');
    // A page of the admitted name is no foreign origin (https behind an ingress, http through a Service).
    for (const origin of ['https://mcp', 'http://mcp', `http://mcp:${bridge.port}`]) {
      const res = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, host: 'mcp', origin }, body: INIT });
      expect(res.status, origin).to.equal(200);
    }
  });

  it('warns at start about a short token, and does not hunt a token of a few characters through its log lines', async () => {
    ({ bridge, log } = await served(undefined, { token: 't' }));
    expect(log.some((l) => l.includes('warning: the token is 1 characters'))).to.equal(true);
    const refused = await rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    expect(refused.status).to.equal(401);
    const line = log.find((l) => l.startsWith('401 POST /mcp'));
    expect(line).to.equal('401 POST /mcp: no Authorization header');
    expect(line).to.not.include('[REDACTED]');
  });

  describe('with the defaults', () => {
    beforeEach(async () => ({ bridge, log } = await served()));

    it('refuses a foreign Host (DNS rebinding) with 403, and admits localhost with its port', async () => {
      const foreign = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, host: `evil.example:${bridge.port}` }, body: INIT });
      expect(foreign.status).to.equal(403);
      expect(foreign.body).to.include('Host');
      const otherPort = await rawRequest(bridge.url!, {
        method: 'POST',
        headers: { ...MCP_HEADERS, host: `127.0.0.1:${bridge.port! + 1}` },
        body: INIT,
      });
      expect(otherPort.status).to.equal(403);
      expect(log.filter((l) => l.startsWith('403 POST /mcp'))).to.have.length(2);
      expect(bridge.sessions).to.equal(0);
      const local = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, host: `localhost:${bridge.port}` }, body: INIT });
      expect(local.status).to.equal(200);
      await stillServes();
    });

    it('refuses a foreign Origin with 403, and admits its own', async () => {
      const foreign = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, origin: 'https://evil.example' }, body: INIT });
      expect(foreign.status).to.equal(403);
      expect(foreign.body).to.include('Origin');
      const own = await rawRequest(bridge.url!, {
        method: 'POST',
        headers: { ...MCP_HEADERS, origin: `http://localhost:${bridge.port}` },
        body: INIT,
      });
      expect(own.status).to.equal(200);
      await stillServes();
    });

    it('answers a body over the limit with 413 without reading it all', async () => {
      await bridge.close();
      ({ bridge, log } = await served(STEPS, { maxMessageBytes: 1000 }));
      const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { pad: 'x'.repeat(2000) } });
      const declared = await rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: big });
      expect(declared.status).to.equal(413);
      // Chunked, with no Content-Length: cut off once past the limit.
      const chunked = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, 'transfer-encoding': 'chunked' }, body: big });
      expect(chunked.status).to.equal(413);
      expect(bridge.sessions).to.equal(0);
      await stillServes();
    });

    it('refuses an unknown session with 404 and a missing one with 400', async () => {
      const unknown = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, 'mcp-session-id': 'not-a-session' }, body: ECHO });
      expect(unknown.status).to.equal(404);
      const missing = await rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: ECHO });
      expect(missing.status).to.equal(400);
      expect(missing.body).to.include('Mcp-Session-Id');
      await stillServes();
    });

    it('gives each wrong request the status the specification names', async () => {
      const session = await rawSession(bridge.url!);
      const s = { 'mcp-session-id': session };
      const statuses = await Promise.all([
        rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, ...s, accept: 'application/json' }, body: ECHO }),
        rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, ...s, 'content-type': 'text/plain' }, body: ECHO }),
        rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, ...s, 'mcp-protocol-version': '1999-01-01' }, body: ECHO }),
        rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, ...s }, body: '{"jsonrpc":"2.0","id":' }),
        rawRequest(bridge.url!, { method: 'PUT', headers: { ...MCP_HEADERS, ...s }, body: ECHO }),
        rawRequest(bridge.url!, { headers: { accept: 'application/json', ...s } }),
        rawRequest(bridge.url!.replace('/mcp', '/elsewhere'), { headers: s }),
      ]);
      expect(statuses.map((r) => r.status)).to.deep.equal([406, 415, 400, 400, 405, 406, 404]);
      expect(JSON.parse(statuses[3]!.body)).to.deep.include({ error: { code: -32700, message: 'the body is not valid JSON' } });
      expect(statuses[4]!.headers.allow).to.equal('GET, POST, DELETE');
      // None of that hurt the session.
      const ok = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, ...s }, body: ECHO });
      expect(ok.body).to.include('"text":"ok"');
    });

    it('refuses a request id already in flight in the session', async () => {
      const session = await rawSession(bridge.url!);
      const headers = { ...MCP_HEADERS, 'mcp-session-id': session };
      const slow = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'steps', arguments: { n: 3, ms: 50 } } });
      const first = await openStream(bridge.url!, { method: 'POST', headers, body: slow });
      const again = await rawRequest(bridge.url!, { method: 'POST', headers, body: slow });
      expect(again.status).to.equal(400);
      expect(again.body).to.include('already in flight');
      await first.ended;
      expect(first.events.at(-1)!.data).to.include('"3 steps"');
    });

    it('answers requests in flight with an error when the server exits, and ends the session', async () => {
      const session = await rawSession(bridge.url!);
      const headers = { ...MCP_HEADERS, 'mcp-session-id': session };
      const slow = openStream(bridge.url!, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'steps', arguments: { n: 50, ms: 50 } } }),
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const exit = await rawRequest(bridge.url!, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'exit' } }),
      });
      const answer = JSON.parse(exit.body.split('data: ').at(-1)!) as { id: number; error: { code: number; message: string } };
      expect(answer.id).to.equal(2);
      expect(answer.error.code).to.equal(-32000);
      expect(answer.error.message).to.match(/^the server is gone: server ".*" exited with code 3$/);
      const stream = await slow;
      await stream.ended;
      expect(JSON.parse(stream.events.at(-1)!.data)).to.deep.include({ id: 1 });
      expect(stream.events.at(-1)!.data).to.match(/exited with code 3/);
      const after = await rawRequest(bridge.url!, { method: 'POST', headers, body: ECHO });
      expect(after.status).to.equal(404);
      await stillServes();
    });
  });

  it('asks for the bearer token: 401 with WWW-Authenticate when missing or wrong', async () => {
    ({ bridge, log } = await served(STEPS, { token: 's3cret-token' }));
    const missing = await rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    expect(missing.status).to.equal(401);
    expect(missing.headers['www-authenticate']).to.equal('Bearer');
    const wrong = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, authorization: 'Bearer s3cret-tokem' }, body: INIT });
    expect(wrong.status).to.equal(401);
    expect(log.join('\n')).to.not.include('s3cret');
    await stillServes({ Authorization: 'Bearer s3cret-token' });
  });

  it('refuses sessions past maxSessions with 503, and takes one again once another ends', async () => {
    ({ bridge, log } = await served(STEPS, { maxSessions: 2 }));
    const one = await rawSession(bridge.url!);
    await rawSession(bridge.url!);
    const third = await rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    expect(third.status).to.equal(503);
    expect(pidsOf(log)).to.have.length(2);
    const ended = await rawRequest(bridge.url!, { method: 'DELETE', headers: { 'mcp-session-id': one } });
    expect(ended.status).to.equal(200);
    expect(await gone(pidsOf(log)[0]!)).to.equal(true);
    await stillServes();
  });

  it('refuses streams past maxStreamsPerSession with 429, and takes them again once one ends', async () => {
    ({ bridge, log } = await served(STEPS, { maxStreamsPerSession: 1 }));
    const session = await rawSession(bridge.url!);
    const headers = { ...MCP_HEADERS, 'mcp-session-id': session };
    const slow = (id: number): string =>
      JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'steps', arguments: { n: 2, ms: 50 } } });
    const first = await openStream(bridge.url!, { method: 'POST', headers, body: slow(1) });
    const second = await rawRequest(bridge.url!, { method: 'POST', headers, body: slow(2) });
    expect(second.status).to.equal(429);
    const get = await rawRequest(bridge.url!, { headers: { accept: 'text/event-stream', 'mcp-session-id': session } });
    expect(get.status).to.equal(429);
    await first.ended;
    const third = await rawRequest(bridge.url!, { method: 'POST', headers, body: slow(3) });
    expect(third.body).to.include('"2 steps"');
  });

  it('reaps a session whose client sent nothing after initialize soon, and keeps one whose client went on', async () => {
    ({ bridge, log } = await served(STEPS, { openIdleMs: 300 }));
    // An opener that gave up: initialize answered, then nothing.
    const init = await rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    expect(init.status).to.equal(200);
    // One that went on: initialized sent.
    await rawSession(bridge.url!);
    const [abandoned, used] = pidsOf(log);
    expect(await gone(abandoned!, 3000)).to.equal(true);
    expect(
      log.some((l) => /ended: its client sent nothing after initialize for 300 ms/.test(l)),
      log.join('\n'),
    ).to.equal(true);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await gone(used!, 10)).to.equal(false);
    expect(bridge.sessions).to.equal(1);
  });

  it('starts a few servers at a time: a burst of opens waits its turn, and one that waits too long gets 503 with Retry-After', async () => {
    // A server that takes 1.5 s to start; one start at a time; 2.2 s of waiting at most.
    const slow = { command: process.execPath, args: ['-e', `setTimeout(() => import(${JSON.stringify(STEPS.args[0])}), 1500)`] };
    ({ bridge, log } = await served(slow, { maxStarting: 1, startWaitMs: 2200 }));
    const open = () => rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    const burst = await Promise.all([open(), open(), open()]);
    // The first starts at once; the second once the first answered (within 2.2 s); the third would wait for the
    // second as well (3 s and more), and is refused when its wait runs out.
    expect(burst.map((r) => r.status).sort()).to.deep.equal([200, 200, 503]);
    const refused = burst.find((r) => r.status === 503)!;
    expect(refused.headers['retry-after']).to.equal('1');
    expect(refused.body).to.include('1 server is starting');
    expect(log.filter((l) => /server pid \d+/.test(l))).to.have.length(2);
    // Neither the refused open nor the wait left a place taken: the next open starts.
    expect(bridge.sessions).to.equal(2);
    expect((await open()).status).to.equal(200);
  });

  it('closes a session left idle, and its child', async () => {
    ({ bridge, log } = await served(STEPS, { sessionIdleMs: 100 }));
    await rawSession(bridge.url!);
    const [pid] = pidsOf(log);
    expect(await gone(pid!, 3000)).to.equal(true);
    expect(log.some((l) => /ended: idle for 100 ms/.test(l))).to.equal(true);
    expect(bridge.sessions).to.equal(0);
  });
});
