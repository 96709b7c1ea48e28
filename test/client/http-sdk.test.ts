import { expect } from 'chai';
import type { Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import { sdkServer } from '../helpers/sdk-http-server.js';

describe("connect over Streamable HTTP to the MCP SDK's server", () => {
  let server: Awaited<ReturnType<typeof sdkServer>>;
  let c: Connection | undefined;
  beforeEach(async () => {
    server = await sdkServer();
  });
  afterEach(async () => {
    await c?.close();
    await server.close();
  });

  it('initializes, lists and calls tools', async () => {
    c = await connect({ type: 'http', url: server.url });
    expect(c.initializeResult).to.deep.include({ serverInfo: { name: 'sdk-http', version: '1.0.0' } });
    const { tools } = (await c.request('tools/list')) as { tools: Array<{ name: string }> };
    expect(tools.map((t) => t.name).sort()).to.deep.equal(['confirm', 'echo', 'roots', 'steps']);
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'ünï 😀' } })).to.deep.include({
      content: [{ type: 'text', text: 'ünï 😀' }],
    });
  });

  it("answers the server's own request by POST", async () => {
    c = await connect({ type: 'http', url: server.url }, { capabilities: { roots: {} } });
    c.onRequest('roots/list', () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
    expect(await c.request('tools/call', { name: 'roots', arguments: {} })).to.deep.include({ content: [{ type: 'text', text: 'file:///work' }] });
  });

  it('resumes a response stream the server closes half way, and delivers every notification once', async () => {
    // The SDK makes streams resumable (priming events, closeSSEStream) for 2025-11-25 clients: the default.
    c = await connect({ type: 'http', url: server.url }, { reconnect: { initialDelayMs: 20, maxAttempts: 5 } });
    const notes: string[] = [];
    c.onNotification('notifications/message', (p) => notes.push(String((p as { data: string }).data)));
    let reconnects = 0;
    c.on('reconnecting', () => reconnects++);
    const result = await c.request('tools/call', { name: 'steps', arguments: { n: 8, drop: true } });
    expect(result).to.deep.include({ content: [{ type: 'text', text: '8 steps' }] });
    expect(notes).to.deep.equal(Array.from({ length: 8 }, (_, i) => `step ${i + 1}`));
    expect(reconnects).to.be.greaterThan(0);
  });
});
