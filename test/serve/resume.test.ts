import { expect } from 'chai';
import type { Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { ServeHandle } from '../../lib/serve/index.js';
import { type CutProxy, cutProxy } from '../helpers/cut-proxy.js';
import { MCP_HEADERS, openStream, rawRequest } from '../helpers/raw-http.js';
import { rawSession, STEPS, served } from '../helpers/served.js';
import { until } from '../helpers/poll.js';

const call = (id: number, args: Record<string, unknown>, token?: string): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'steps', arguments: args, ...(token === undefined ? {} : { _meta: { progressToken: token } }) },
  });

describe('serve: streams that drop and resume', () => {
  let bridge: ServeHandle | undefined;
  let proxy: CutProxy | undefined;
  let c: Connection | undefined;
  afterEach(async () => {
    await c?.close();
    c = undefined;
    await proxy?.close();
    proxy = undefined;
    await bridge?.close();
    bridge = undefined;
  });

  it('opens no stream with the priming event for a client that asked for a revision before 2025-11-25, and still resumes it by event id', async () => {
    ({ bridge } = await served(STEPS));
    const url = bridge.url!;
    for (const [version, primed] of [
      ['2025-06-18', false],
      ['2025-03-26', false],
      ['2025-11-25', true],
    ] as const) {
      const init = await rawRequest(url, {
        method: 'POST',
        headers: MCP_HEADERS,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      });
      // An SDK client of those revisions parses every event's data as JSON: no event without data is sent.
      const dataless = (body: string): boolean => body.split('\n\n').some((e) => /^data:\s*$/m.test(e) || /^retry:/m.test(e));
      expect(dataless(init.body), `the initialize answer at ${version}`).to.equal(primed);
      const session = { ...MCP_HEADERS, 'mcp-session-id': init.headers['mcp-session-id'] as string, 'mcp-protocol-version': version };
      await rawRequest(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
      const steps = await openStream(url, { method: 'POST', headers: session, body: call(2, { n: 3, ms: 30 }, 'tok') });
      await steps.until(primed ? 2 : 1);
      steps.drop();
      const first = steps.events.find((e) => e.data !== '')!;
      expect(first.id, 'a message event keeps its id').to.match(/^\d+-\d+$/);
      expect(
        steps.events.some((e) => e.data === ''),
        `a POST stream at ${version}`,
      ).to.equal(primed);
      // Resumed from the message event's id: the rest of the stream, no priming.
      const resumed = await openStream(url, { headers: { ...session, accept: 'text/event-stream', 'last-event-id': first.id! } });
      await resumed.ended;
      const rest = resumed.events.filter((e) => e.data !== '').map((e) => JSON.parse(e.data) as { params?: { progress?: number }; result?: unknown });
      expect(rest.at(-1)?.result, `resumed at ${version}`).to.deep.equal({ content: [{ type: 'text', text: '3 steps' }] });
      expect(rest.some((m) => m.params?.progress === 1)).to.equal(false);
      const get = await openStream(url, { headers: { ...session, accept: 'text/event-stream' } });
      await new Promise((resolve) => setTimeout(resolve, 100));
      get.drop();
      expect(
        get.events.some((e) => e.data === ''),
        `the GET stream at ${version}`,
      ).to.equal(primed);
    }
  });

  it('lets a resume (Last-Event-ID) take over a stream whose old connection has not ended yet; a second plain GET is still 409', async () => {
    ({ bridge } = await served(STEPS));
    const url = bridge.url!;
    const id = await rawSession(url);
    const session = { ...MCP_HEADERS, 'mcp-session-id': id };
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'steps', arguments: { n: 4, ms: 60 }, _meta: { progressToken: 't' } },
    });
    const old = await openStream(url, { method: 'POST', headers: session, body });
    await old.until(2);
    const last = old.events.filter((e) => e.data !== '').at(-1)!.id!;
    // The old connection is still open: its client has not gone, as a cut at another replica is not yet known here.
    const resumed = await openStream(url, { headers: { ...session, accept: 'text/event-stream', 'last-event-id': last } });
    expect(resumed.status).to.equal(200);
    await old.ended;
    await resumed.ended;
    const messages = [...old.events, ...resumed.events]
      .filter((e) => e.data !== '')
      .map((e) => JSON.parse(e.data) as { method?: string; id?: number; params?: { progress?: number } });
    expect(messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params!.progress)).to.deep.equal([1, 2, 3, 4]);
    expect(messages.filter((m) => m.id === 2)).to.have.length(1);
    const get = await openStream(url, { headers: { ...session, accept: 'text/event-stream' } });
    const second = await rawRequest(url, { headers: { ...session, accept: 'text/event-stream' } });
    expect(second.status).to.equal(409);
    get.drop();
  });

  it('connect() through a proxy that cuts the GET and the POST stream mid-response: every message arrives once', async () => {
    proxy = await cutProxy();
    ({ bridge } = await served(STEPS, { allowHosts: [`127.0.0.1:${proxy.port}`] }));
    proxy.target = bridge.port!;
    // A legacy session (resumable streams): asked for, since serve would speak modern to an auto client.
    c = await connect(
      { type: 'http', url: `http://127.0.0.1:${proxy.port}/mcp` },
      { protocolVersion: '2025-11-25', reconnect: { initialDelayMs: 10, maxAttempts: 10 } },
    );
    const progress: number[] = [];
    const notes: string[] = [];
    c.onNotification('notifications/progress', (p) => progress.push((p as { progress: number }).progress));
    c.onNotification('notifications/message', (p) => notes.push((p as { data: string }).data));
    let reconnects = 0;
    c.on('reconnecting', () => reconnects++);
    const answer = c.request('tools/call', { name: 'steps', arguments: { n: 12, ms: 30 }, _meta: { progressToken: 'p' } });
    await until(5000, 'four progress notifications', () => progress.length >= 4, 5);
    proxy.cut();
    expect(await answer).to.deep.equal({ content: [{ type: 'text', text: '12 steps' }] });
    await until(5000, 'twelve notes', () => notes.length >= 12, 5);
    expect(reconnects).to.be.greaterThan(0);
    expect(progress).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(notes).to.deep.equal(Array.from({ length: 12 }, (_, i) => `note ${i + 1}`));
  });

  it('replays what followed Last-Event-ID on that stream only, then the live rest; ids are unique', async () => {
    ({ bridge } = await served());
    const session = await rawSession(bridge.url!);
    const headers = { ...MCP_HEADERS, 'mcp-session-id': session };
    const first = await openStream(bridge.url!, { method: 'POST', headers, body: call(7, { n: 6, ms: 40 }, 'tok') });
    expect(first.status).to.equal(200);
    expect(first.headers['cache-control']).to.include('no-cache');
    expect(first.headers['x-accel-buffering']).to.equal('no');
    await first.until(3);
    first.drop();
    const [priming] = first.events;
    expect(priming).to.deep.include({ data: '' });
    expect(priming!.retry).to.equal('1000');
    const last = first.events.at(-1)!.id!;
    const rest = await openStream(bridge.url!, { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'last-event-id': last } });
    expect(rest.status).to.equal(200);
    await rest.ended;
    const events = [...first.events.slice(1), ...rest.events];
    const messages = events.map((e) => JSON.parse(e.data) as { method?: string; id?: number; params?: { progress?: number } });
    // With one request in flight and no GET stream, its log messages ride its stream too.
    expect(messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params!.progress)).to.deep.equal([1, 2, 3, 4, 5, 6]);
    expect(messages.filter((m) => m.method === 'notifications/message')).to.have.length(6);
    expect(messages.at(-1)).to.deep.include({ id: 7 });
    const ids = [priming!.id, ...events.map((e) => e.id)];
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('sends an answer that comes at once with its headers in one response (Content-Length, priming event, answer)', async () => {
    ({ bridge } = await served());
    const session = await rawSession(bridge.url!);
    const headers = { ...MCP_HEADERS, 'mcp-session-id': session };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo', arguments: { text: 'at once ✓' } } });
    const answer = await rawRequest(bridge.url!, { method: 'POST', headers, body });
    expect(answer.status).to.equal(200);
    expect(answer.headers['content-type']).to.equal('text/event-stream');
    expect(answer.headers['transfer-encoding']).to.equal(undefined);
    expect(Number(answer.headers['content-length'])).to.equal(Buffer.byteLength(answer.body));
    const events = answer.body.split('\n\n').filter((e) => e !== '');
    expect(events).to.have.length(2);
    expect(events[0]).to.match(/^id: \d+-0\nretry: 1000\ndata:$/);
    expect(events[1]).to.match(/^id: \d+-1\nevent: message\ndata: /);
    expect(JSON.parse(events[1]!.split('data: ')[1]!)).to.deep.include({ id: 4, result: { content: [{ type: 'text', text: 'at once ✓' }] } });
  });

  it('starts the stream of a request that is slow to answer at once, without waiting for its first event', async () => {
    ({ bridge } = await served());
    const session = await rawSession(bridge.url!);
    const headers = { ...MCP_HEADERS, 'mcp-session-id': session };
    const started = Date.now();
    const slow = await openStream(bridge.url!, { method: 'POST', headers, body: call(5, { n: 1, ms: 600 }) });
    expect(slow.status).to.equal(200);
    await slow.until(1);
    // The priming event, long before the tool's first message (600 ms).
    expect(Date.now() - started).to.be.below(400);
    expect(slow.events[0]).to.deep.include({ data: '' });
    expect(slow.headers['transfer-encoding']).to.equal('chunked');
    await slow.ended;
    const messages = slow.events.slice(1).map((e) => JSON.parse(e.data) as { id?: number; method?: string });
    expect(messages.map((m) => m.method ?? m.id)).to.deep.equal(['notifications/message', 5]);
  });

  it('says clearly when the events after an id are no longer held, or the id was never sent', async () => {
    ({ bridge } = await served(STEPS, { replayBytes: 300 }));
    const session = await rawSession(bridge.url!);
    const headers = { ...MCP_HEADERS, 'mcp-session-id': session };
    const first = await openStream(bridge.url!, { method: 'POST', headers, body: call(1, { n: 8, ms: 5 }, 'tok') });
    await first.until(1);
    first.drop();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const get = { accept: 'text/event-stream', 'mcp-session-id': session };
    const late = await rawRequest(bridge.url!, { headers: { ...get, 'last-event-id': first.events[0]!.id! } });
    expect(late.status).to.equal(410);
    expect(late.body).to.match(/no longer held.*300 bytes/);
    const never = await rawRequest(bridge.url!, { headers: { ...get, 'last-event-id': '1-999' } });
    expect(never.status).to.equal(410);
    expect(never.body).to.include('never sent');
    const unknown = await rawRequest(bridge.url!, { headers: { ...get, 'last-event-id': 'abc' } });
    expect(unknown.status).to.equal(400);
  });

  it('holds what the server sends with no stream to carry it until the GET stream opens', async () => {
    ({ bridge } = await served());
    const session = await rawSession(bridge.url!);
    const headers = { ...MCP_HEADERS, 'mcp-session-id': session };
    const later = (id: number, text: string): string =>
      JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'later', arguments: { text } } });
    // Each message comes after its request was answered: no request's stream can carry it, and no GET is open.
    for (const [id, text] of [
      [1, 'first'],
      [2, 'second'],
    ] as const) {
      const answer = await rawRequest(bridge.url!, { method: 'POST', headers, body: later(id, text) });
      expect(answer.body).to.not.include('notifications/message');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const get = await openStream(bridge.url!, { headers: { accept: 'text/event-stream', 'mcp-session-id': session } });
    await get.until(3);
    expect(get.events.slice(1).map((e) => (JSON.parse(e.data) as { params: { data: string } }).params.data)).to.deep.equal(['first', 'second']);
    const second = await rawRequest(bridge.url!, { headers: { accept: 'text/event-stream', 'mcp-session-id': session } });
    expect(second.status).to.equal(409);
    get.drop();
  });
});
