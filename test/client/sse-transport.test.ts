import { expect } from 'chai';
import type { Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { ConnectionError } from '../../lib/client/errors.js';
import { rejection } from '../helpers/rejection.js';
import { sseServer } from '../helpers/sse-server.js';

describe('connect over the deprecated HTTP+SSE transport (the MCP SDK server, on 127.0.0.1)', () => {
  let server: Awaited<ReturnType<typeof sseServer>>;
  let c: Connection | undefined;
  afterEach(async () => {
    await c?.close();
    c = undefined;
    await server.close();
  });

  it('reads the endpoint event, posts there, and gets answers on the stream', async () => {
    server = await sseServer();
    c = await connect({ type: 'sse', url: server.url, headers: { 'X-Api-Key': 'k-123' } });
    expect(c.initializeResult).to.deep.include({ serverInfo: { name: 'sdk-sse', version: '1.0.0' } });
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'ünï 👋' } })).to.deep.include({
      content: [{ type: 'text', text: 'ünï 👋' }],
    });
    expect(server.seen.every((h) => h['x-api-key'] === 'k-123')).to.equal(true);
  });

  it('when the stream drops, rejects what was in flight with STREAM_LOST, reconnects and works in a new session', async () => {
    server = await sseServer();
    c = await connect({ type: 'sse', url: server.url }, { reconnect: { initialDelayMs: 20, maxAttempts: 5 } });
    const slow = c.request('tools/call', { name: 'slow', arguments: {} }, { timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 50));
    const reconnected = new Promise((resolve) => c!.once('reconnected', resolve));
    server.drop();
    const err = (await rejection(slow)) as ConnectionError;
    expect(err.code).to.equal('STREAM_LOST');
    await reconnected;
    for (let i = 0; i < 50; i++) {
      try {
        expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'again' } })).to.deep.include({
          content: [{ type: 'text', text: 'again' }],
        });
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    throw new Error('the new session never answered');
  });

  it('refuses an endpoint on another origin, which would receive the configured headers', async () => {
    server = await sseServer({ endpoint: 'http://127.0.0.2:9/messages' });
    const err = (await rejection(connect({ type: 'sse', url: server.url, headers: { Authorization: 'Bearer sk-sse-secret-1' } }))) as ConnectionError;
    expect(err.code).to.equal('HTTP_STATUS');
    expect(err.message).to.match(/another origin/);
    expect(err.message).to.not.include('sk-sse-secret');
  });
});
