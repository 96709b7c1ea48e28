// listen(): a subscriptions/listen stream on a modern server (the MCP SDK 2.4 server), and the same filter
// mapped to resources/subscribe and the session's notifications on a legacy one.
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type http from 'node:http';
import type { RpcError } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { ConnectionError } from '../../lib/client/errors.js';
import { hostile, json } from '../helpers/hostile-http.js';
import { rejection } from '../helpers/rejection.js';
import { cli } from '../helpers/run.js';
import { until } from '../helpers/poll.js';

const server = (name: string, ...args: string[]) => ({
  command: process.execPath,
  args: [fileURLToPath(new URL(`../helpers/servers/${name}.js`, import.meta.url)), ...args],
});

describe('listen(): list changes and resource updates, both eras', function () {
  this.timeout(20_000);

  it('opens a subscriptions/listen stream on a modern server, hears its tool list change, and closes it', async () => {
    const c = await connect(server('sdk2', 'modern'));
    try {
      const heard: string[] = [];
      const sub = await c.listen({ toolsListChanged: true }, (msg) => heard.push(String(msg.method)));
      expect(sub.acknowledged).to.deep.include({ toolsListChanged: true });
      await c.request('tools/call', { name: 'grow', arguments: { name: 'sprout' } });
      await until(2000, 'a notification heard', () => heard.length > 0, 10);
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
      await until(2000, 'a notification heard', () => heard.length > 0, 10);
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
      await until(2000, 'two notifications heard', () => heard.length >= 2, 10);
      expect(heard.slice(0, 2)).to.deep.equal([{ uri: 'file:///a.txt' }, { uri: 'file:///a.txt' }]);
      await sub.close();
      const after = heard.length;
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard.length).to.equal(after);
    } finally {
      await c.close();
    }
  });

  it('keeps long-lived listen streams off the request sockets: 65 listens, and a request still goes out', async () => {
    const listens = new Set<http.ServerResponse>();
    const server = await hostile((_req, res, body) => {
      const msg = JSON.parse(body) as { id: unknown; method: string };
      if (msg.method === 'server/discover')
        return json(res, {
          jsonrpc: '2.0',
          id: msg.id,
          result: { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true } } },
        });
      if (msg.method !== 'subscriptions/listen') return json(res, { jsonrpc: '2.0', id: msg.id, result: { tools: [] } });
      listens.add(res);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const meta = { 'io.modelcontextprotocol/subscriptionId': msg.id };
      res.write(
        `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true }, _meta: meta } })}\n\n`,
      );
    });
    const c = await connect({ type: 'http', url: server.url });
    try {
      const subs = [];
      for (let i = 0; i < 65; i++) subs.push(await c.listen({ toolsListChanged: true }, () => undefined));
      expect(listens.size).to.equal(65);
      expect(await c.request('tools/list', {}, { timeoutMs: 3000 })).to.deep.equal({ tools: [] });
      await Promise.all(subs.map((sub) => sub.close()));
    } finally {
      await c.close();
      await server.close();
    }
  });
});

describe("paged lists and the -32020 recovery: bounded by the caller's timeout and by repeated cursors", function () {
  this.timeout(20_000);

  /** A modern server whose tool calls always get HeaderMismatch, and whose tools/list pages never end. */
  async function endlessPages(cursor: (n: number) => string) {
    const lists: unknown[] = [];
    const server = await hostile((_req, res, body) => {
      const msg = JSON.parse(body) as { id: unknown; method: string; params?: { cursor?: string } };
      if (msg.method === 'server/discover')
        return json(res, { jsonrpc: '2.0', id: msg.id, result: { supportedVersions: ['2026-07-28'], capabilities: { tools: {} } } });
      if (msg.method === 'tools/call')
        return void res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32020, message: 'Header mismatch' } }));
      lists.push(msg.params?.cursor);
      const page = { tools: [{ name: `t${lists.length}`, inputSchema: { type: 'object' } }], nextCursor: cursor(lists.length) };
      // A few ms a page, as a real server's: on a fast machine the client's page cap (1000) could otherwise end an
      // endless listing before a 400 ms timeout does, and the test would not see the timeout it is about.
      setTimeout(() => json(res, { jsonrpc: '2.0', id: msg.id, result: page }), 3);
    });
    return { ...server, lists };
  }

  it('stops reading the tool list at a cursor it was given before', async () => {
    const server = await endlessPages(() => 'again');
    const c = await connect({ type: 'http', url: server.url });
    try {
      const err = await rejection<RpcError>(c.request('tools/call', { name: 'x', arguments: {} }, { timeoutMs: 5000 }));
      expect(err.code).to.equal(-32020);
      expect(server.lists).to.deep.equal([undefined, 'again']);
    } finally {
      await c.close();
      await server.close();
    }
  });

  it("ends a request whose recovery would list forever within the request's own timeout", async () => {
    const server = await endlessPages((n) => `page-${n}`);
    const c = await connect({ type: 'http', url: server.url });
    try {
      const started = Date.now();
      const err = await rejection<ConnectionError>(c.request('tools/call', { name: 'x', arguments: {} }, { timeoutMs: 400 }));
      expect(err.code).to.equal('TIMEOUT');
      expect(Date.now() - started).to.be.below(1500);
      const asked = server.lists.length;
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(server.lists.length).to.be.at.most(asked + 1);
    } finally {
      await c.close();
      await server.close();
    }
  });

  it('mcp-frame tools stops at a repeated cursor, says so, and lists what it read', async () => {
    const server = await endlessPages(() => 'again');
    try {
      const result = await cli(['tools', '--url', server.url]);
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stdout).to.match(/^t1\b/m);
      expect(result.stdout).to.match(/^t2\b/m);
      expect(result.stderr).to.match(/tools\/list stopped after 2 items: the server gave cursor "again" a second time/);
      expect(server.lists).to.have.length(2);
    } finally {
      await server.close();
    }
  });
});
