// The MCP SDK's own Streamable HTTP server, in process on 127.0.0.1, for tests of the HTTP client and the bridge.
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/** The MCP SDK's own Streamable HTTP server, in process on 127.0.0.1, with an event store so streams resume. */
export async function sdkServer(): Promise<{ url: string; sessions: Map<string, StreamableHTTPServerTransport>; close: () => Promise<void> }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers: McpServer[] = [];
  const makeServer = (): McpServer => {
    const server = new McpServer({ name: 'sdk-http', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
    server.registerTool('steps', { inputSchema: { n: z.number(), drop: z.boolean() } }, async ({ n, drop }, extra) => {
      for (let i = 1; i <= n; i++) {
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: `step ${i}` } });
        // Close the response stream half way: the client must resume it with Last-Event-ID.
        if (drop && i === Math.floor(n / 2)) extra.closeSSEStream?.();
        await new Promise((r) => setTimeout(r, 5));
      }
      return { content: [{ type: 'text', text: `${n} steps` }] };
    });
    // A request from the server, on the request's stream: the client answers it by POST.
    server.registerTool('roots', {}, async () => {
      const { roots } = await server.server.listRoots();
      return { content: [{ type: 'text', text: roots.map((r) => r.uri).join(',') }] };
    });
    // Elicitation the legacy way: the server's own elicitation/create request, on the call's stream.
    server.registerTool('confirm', {}, async (extra) => {
      const answer = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: { message: 'Proceed?', requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } },
        },
        ElicitResultSchema,
      );
      return { content: [{ type: 'text', text: `${answer.action}: ${JSON.stringify(answer.content)}` }] };
    });
    servers.push(server);
    return server;
  };
  const httpServer = http.createServer(async (req, res) => {
    const session = req.headers['mcp-session-id'];
    let transport = typeof session === 'string' ? transports.get(session) : undefined;
    if (transport === undefined) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: new InMemoryEventStore(),
        retryInterval: 50,
        onsessioninitialized: (id) => void transports.set(id, transport!),
      });
      await makeServer().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sessions: transports,
    close: async () => {
      await Promise.all(servers.map((s) => s.close()));
      httpServer.closeAllConnections();
      await new Promise((resolve) => httpServer.close(resolve));
    },
  };
}
