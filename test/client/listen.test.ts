// listen(): a subscriptions/listen stream on a modern server (the MCP SDK 2.4 server), and the same filter
// mapped to resources/subscribe and the session's notifications on a legacy one.
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { connect } from '../../lib/client/connection.js';
import { hostile, json } from '../helpers/hostile-http.js';

const server = (name: string, ...args: string[]) => ({
  command: process.execPath,
  args: [fileURLToPath(new URL(`../helpers/servers/${name}.js`, import.meta.url)), ...args],
});

const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('listen(): list changes and resource updates, both eras', function () {
  this.timeout(20_000);

  it('opens a subscriptions/listen stream on a modern server, hears its tool list change, and closes it', async () => {
    const c = await connect(server('sdk2', 'modern'));
    try {
      const heard: string[] = [];
      const sub = await c.listen({ toolsListChanged: true }, (msg) => heard.push(String(msg.method)));
      expect(sub.acknowledged).to.deep.include({ toolsListChanged: true });
      await c.request('tools/call', { name: 'grow', arguments: { name: 'sprout' } });
      await until(() => heard.length > 0);
      expect(heard).to.deep.equal(['notifications/tools/list_changed']);
      await sub.close();
      await c.request('tools/call', { name: 'grow', arguments: { name: 'shoot' } });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard).to.have.length(1);
    } finally {
      await c.close();
    }
  });

  it('opens the listen stream again over HTTP when it breaks, and keeps hearing on it', async () => {
    const listens: unknown[] = [];
    const server = await hostile((_req, res, body) => {
      const msg = JSON.parse(body) as { id: unknown; method: string };
      if (msg.method === 'server/discover')
        return json(res, {
          jsonrpc: '2.0',
          id: msg.id,
          result: { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true } } },
        });
      listens.push(msg.id);
      const event = (method: string, params: Record<string, unknown>): string =>
        `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method, params: { ...params, _meta: { 'io.modelcontextprotocol/subscriptionId': msg.id } } })}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(event('notifications/subscriptions/acknowledged', { notifications: { toolsListChanged: true } }));
      // The first stream breaks; the one opened again (under another id) carries a change.
      if (listens.length === 1) setTimeout(() => res.destroy(), 20);
      else res.write(event('notifications/tools/list_changed', {}));
    });
    const c = await connect({ type: 'http', url: server.url }, { reconnect: { initialDelayMs: 10, maxAttempts: 5 } });
    try {
      const heard: string[] = [];
      await c.listen({ toolsListChanged: true }, (msg) => heard.push(String(msg.method)));
      await until(() => heard.length > 0);
      expect(listens).to.have.length(2);
      expect(listens[1]).to.not.equal(listens[0]);
      expect(heard).to.deep.equal(['notifications/tools/list_changed']);
    } finally {
      await c.close();
      await server.close();
    }
  });

  it('maps the filter to resources/subscribe on a legacy server, and passes on only what it asked for', async () => {
    const c = await connect(server('subscriber'));
    try {
      const heard: unknown[] = [];
      const sub = await c.listen({ resourceSubscriptions: ['file:///a.txt'], promptsListChanged: true }, (msg) => heard.push(msg.params));
      // The server offers subscriptions but no prompt list changes: only what it can do is acknowledged.
      expect(sub.acknowledged).to.deep.equal({ resourceSubscriptions: ['file:///a.txt'] });
      await until(() => heard.length >= 2);
      expect(heard.slice(0, 2)).to.deep.equal([{ uri: 'file:///a.txt' }, { uri: 'file:///a.txt' }]);
      await sub.close();
      const after = heard.length;
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard.length).to.equal(after);
    } finally {
      await c.close();
    }
  });
});
