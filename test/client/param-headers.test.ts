// Custom headers from tool parameters (MCP 2026-07-28 Streamable HTTP, SEP-2243): x-mcp-header declarations
// mirrored into Mcp-Param-* headers (the rules and encoding: test/protocol/param-headers.test.ts), against the MCP SDK 2.4 server that checks them; tools whose annotations
// break the rules left out of tools/list; a HeaderMismatch answered by reading the tool list again, once.
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import { hostile, json } from '../helpers/hostile-http.js';
import { sdk2Http } from '../helpers/sdk2.js';

describe('x-mcp-header: tool parameters mirrored into Mcp-Param-* headers', function () {
  this.timeout(20_000);

  it('calls a tool of the MCP SDK 2.4 server that checks the headers against the body, plain and Base64', async () => {
    const server = await sdk2Http('modern');
    const c = await connect({ type: 'http', url: server.url });
    try {
      await c.request('tools/list');
      for (const region of ['eu-west-1', 'zürich ☃']) {
        const result = (await c.request('tools/call', { name: 'route', arguments: { region, shard: 7, q: 'find' } })) as {
          content: Array<{ text: string }>;
        };
        expect(result.content[0]!.text).to.equal(`find in ${region}/7`);
      }
      const calls = server.seen.filter((r) => r.body.includes('"tools/call"'));
      expect(calls.map((r) => r.headers['mcp-param-region'])).to.deep.equal([
        'eu-west-1',
        `=?base64?${Buffer.from('zürich ☃').toString('base64')}?=`,
      ]);
      expect(calls.map((r) => r.headers['mcp-param-shard'])).to.deep.equal(['7', '7']);
    } finally {
      await c.close();
      await server.close();
    }
  });

  it('lists the tools again after a HeaderMismatch and sends the call once more, and leaves out tools that break the rules', async () => {
    const seen: Array<{ method: string; region: string | undefined }> = [];
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.message);
    process.on('warning', onWarning);
    const tools = [
      { name: 'route', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } } },
      { name: 'broken', inputSchema: { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } } },
    ];
    const server = await hostile((req, res, body) => {
      const msg = JSON.parse(body) as { id: number; method: string; params: { arguments?: { region?: string } } };
      const region = req.headers['mcp-param-region'] as string | undefined;
      seen.push({ method: msg.method, region });
      if (msg.method === 'server/discover')
        return json(res, { jsonrpc: '2.0', id: msg.id, result: { supportedVersions: ['2026-07-28'], capabilities: { tools: {} } } });
      if (msg.method === 'tools/list') return json(res, { jsonrpc: '2.0', id: msg.id, result: { tools } });
      if (region !== msg.params.arguments?.region) {
        return void res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32020, message: 'Header mismatch: Mcp-Param-Region' } }));
      }
      json(res, { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: `ok ${region}` }] } });
    });
    const c = await connect({ type: 'http', url: server.url });
    try {
      // Called before any tools/list: no header, a mismatch, the list read, the call again with the header.
      const result = (await c.request('tools/call', { name: 'route', arguments: { region: 'eu' } })) as { content: Array<{ text: string }> };
      expect(result.content[0]!.text).to.equal('ok eu');
      expect(seen.slice(1).map((s) => `${s.method}:${s.region ?? '-'}`)).to.deep.equal(['tools/call:-', 'tools/list:-', 'tools/call:eu']);
      const listed = (await c.request('tools/list')) as { tools: Array<{ name: string }> };
      expect(listed.tools.map((t) => t.name)).to.deep.equal(['route']);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.includes('"broken"'))).to.have.length(1);
    } finally {
      process.off('warning', onWarning);
      await c.close();
      await server.close();
    }
  });
});
