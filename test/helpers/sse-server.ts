// The MCP SDK's deprecated HTTP+SSE server (2024-11-05) on 127.0.0.1, for the transport's tests.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';

/** The MCP SDK's deprecated HTTP+SSE server, in process on 127.0.0.1. `drop()` cuts every open stream. */
export async function sseServer(options: { endpoint?: string } = {}) {
  const transports = new Map<string, SSEServerTransport>();
  const streams = new Set<http.ServerResponse>();
  const servers: McpServer[] = [];
  const seen: http.IncomingHttpHeaders[] = [];
  const httpServer = http.createServer(async (req, res) => {
    seen.push(req.headers);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/sse') {
      if (options.endpoint !== undefined) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`event: endpoint\ndata: ${options.endpoint}\n\n`);
        streams.add(res);
        return;
      }
      const transport = new SSEServerTransport('/messages', res);
      transports.set(transport.sessionId, transport);
      streams.add(res);
      res.on('close', () => streams.delete(res));
      const server = new McpServer({ name: 'sdk-sse', version: '1.0.0' });
      server.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
      server.registerTool('slow', {}, async () => {
        await new Promise((r) => setTimeout(r, 2000));
        return { content: [{ type: 'text', text: 'late' }] };
      });
      servers.push(server);
      await server.connect(transport);
      return;
    }
    const transport = transports.get(url.searchParams.get('sessionId') ?? '');
    if (req.method === 'POST' && transport !== undefined) return void (await transport.handlePostMessage(req, res));
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    seen,
    drop: () => {
      for (const res of streams) res.destroy();
    },
    close: async () => {
      await Promise.all(servers.map((s) => s.close()));
      for (const res of streams) res.destroy();
      httpServer.closeAllConnections();
      await new Promise((resolve) => httpServer.close(resolve));
    },
  };
}
