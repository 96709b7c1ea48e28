// bridge between eras, through the real binary: a legacy host (the MCP SDK 1.32.2 client, which sends
// initialize) through `mcp-frame bridge` to a modern-only server (the MCP SDK 2.4 server), completing an
// elicitation-driven tool call; a modern host passing through with the headers its revision requires; and a
// server of the deprecated HTTP+SSE transport reached by the same command.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import { ROOT } from '../helpers/fixtures.js';
import { hostile, legacyHttp } from '../helpers/hostile-http.js';
import { cli } from '../helpers/run.js';
import { sdkServer } from '../helpers/sdk-http-server.js';
import { sdk2Http } from '../helpers/sdk2.js';
import { sseServer } from '../helpers/sse-server.js';

const bridge = (url: string) => ({ command: process.execPath, args: [`${ROOT}dist/lib/cli/main.js`, 'bridge', '--url', url] });

describe('mcp-frame bridge between eras', function () {
  this.timeout(30_000);

  it('lets a legacy host complete an elicitation-driven tool call on a modern-only server', async () => {
    const server = await sdk2Http('modern');
    const host = new Client({ name: 'legacy-host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    const asked: string[] = [];
    host.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { confirm: true } };
    });
    try {
      await host.connect(new StdioClientTransport({ ...bridge(server.url), stderr: 'pipe' }));
      // The host sees the remote's own name, from its discover result, and an ordinary legacy session.
      expect(host.getServerVersion()?.name).to.equal('sdk2-modern');
      const { tools } = await host.listTools();
      expect(tools.map((t) => t.name)).to.include('deploy');
      const result = await host.callTool({ name: 'deploy', arguments: { env: 'prod' } });
      expect(result.content).to.deep.equal([{ type: 'text', text: 'deployed to prod (state deploy:prod:✓)' }]);
      expect(asked).to.deep.equal(['Deploy to prod?']);
      // Everything reached the server the modern way: no initialize got through after the first refusal.
      const methods = server.seen.map((r) => (r.body === '' ? r.method : (JSON.parse(r.body) as { method?: string }).method));
      expect(methods.filter((m) => m === 'initialize')).to.have.length(1);
      expect(methods).to.include('server/discover');
    } finally {
      await host.close();
      await server.close();
    }
  });

  it('gives a legacy host that asks an older revision (2025-06-18) that revision back, from a modern-only server', async () => {
    const server = await sdk2Http('modern');
    try {
      const c = await connect(bridge(server.url), { protocolVersion: '2025-06-18' });
      expect([c.era, c.protocolVersion]).to.deep.equal(['legacy', '2025-06-18']);
      expect((c.initializeResult?.serverInfo as { name?: string } | undefined)?.name).to.equal('sdk2-modern');
      expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'old revision' } })).to.deep.include({
        content: [{ type: 'text', text: 'old revision' }],
      });
      await c.close();
    } finally {
      await server.close();
    }
  });

  it('passes a modern host through, with the 2026-07-28 headers', async () => {
    const server = await sdk2Http('modern');
    try {
      const c = await connect(bridge(server.url), { protocolVersion: '2026-07-28' });
      const result = (await c.request('tools/call', { name: 'echo', arguments: { text: 'ünïcödé through' } })) as {
        content: Array<{ text: string }>;
      };
      expect(result.content[0]!.text).to.equal('ünïcödé through');
      await c.close();
      const call = server.seen.find((r) => r.body.includes('"tools/call"'))!;
      expect(call.headers).to.include({ 'mcp-method': 'tools/call', 'mcp-name': 'echo', 'mcp-protocol-version': '2026-07-28' });
    } finally {
      await server.close();
    }
  });

  it('lets a modern host complete an elicitation-driven tool call on a legacy server (the host falls back to initialize)', async () => {
    const server = await sdkServer();
    try {
      const asked: string[] = [];
      const c = await connect(bridge(server.url), {
        onSpawn: (conn) =>
          conn.onRequest('elicitation/create', (params) => {
            asked.push((params as { message: string }).message);
            return { action: 'accept', content: { confirm: true } };
          }),
      });
      expect(c.era).to.equal('legacy');
      const result = (await c.request('tools/call', { name: 'confirm', arguments: {} })) as { content: Array<{ text: string }> };
      expect(result.content[0]!.text).to.equal('accept: {"confirm":true}');
      expect(asked).to.deep.equal(['Proceed?']);
      await c.close();
    } finally {
      await server.close();
    }
  });

  it('reaches a server of the deprecated HTTP+SSE transport, falling back as connect() does', async () => {
    const server = await sseServer();
    try {
      const c = await connect(bridge(server.url));
      const result = (await c.request('tools/call', { name: 'echo', arguments: { text: 'over sse' } })) as { content: Array<{ text: string }> };
      expect(result.content[0]!.text).to.equal('over sse');
      await c.close();
    } finally {
      await server.close();
    }
  });
});

describe('mcp-frame bridge when the remote server is gone', function () {
  this.timeout(30_000);

  it('gives up within the attempts and the delay asked for (--reconnect-attempts, --reconnect-max-delay), answering the host with an error', async () => {
    const server = await hostile(
      legacyHttp((_req, res, body) => {
        const msg = JSON.parse(body) as { id: number };
        // An event with an id, then the stream drops, and the server with it: every resumption finds nobody.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`id: 1\nretry: 50\ndata: \n\n`);
        setTimeout(() => {
          res.destroy();
          void server.close();
        }, 20);
        void msg;
      }),
    );
    const args = [...bridge(server.url).args, '--reconnect-attempts', '2', '--reconnect-max-delay', '200'];
    const c = await connect({ command: process.execPath, args });
    try {
      const started = Date.now();
      const err = (await c.request('tools/call', { name: 'slow', arguments: {} }).then(
        () => undefined,
        (e: Error) => e,
      )) as Error & { code?: number };
      expect(err?.message).to.match(/gave up .* after 2 failed attempts/);
      expect(Date.now() - started).to.be.lessThan(3000);
    } finally {
      await c.close();
    }
  });

  it('refuses a --reconnect-attempts that is not a whole number, and a --header-env whose variable is unset', async () => {
    const r = await cli(['bridge', '--url', 'http://127.0.0.1:9/mcp', '--reconnect-attempts', 'many']);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.include('--reconnect-attempts takes a whole number');
    // Headers from the environment, as call --url takes them: an unset variable is a config error.
    const unset = await cli(['bridge', '--url', 'http://127.0.0.1:9/mcp', '--header-env', 'Authorization=NOT_SET_FOR_BRIDGE']);
    expect(unset.code).to.equal(3);
    expect(unset.stderr).to.include('variable NOT_SET_FOR_BRIDGE is not set');
  });
});
