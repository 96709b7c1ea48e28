// Servers of the MCP SDK 2.x (@modelcontextprotocol/server, the 2026-07-28 revision) for the protocol-era
// tests: one factory (echo, and steps with progress: `steps` annotated idempotent, `steps-once` not), served over HTTP on 127.0.0.1 through the SDK's
// web-standard handler, modern-only (`legacy: 'reject'`) or dual-era (`legacy: 'stateless'`).
import http from 'node:http';
import type net from 'node:net';
import { acceptedContent, createMcpHandler, inputRequired, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

export function sdk2Server(name: string): McpServer {
  const server = new McpServer({ name, version: '2.0.0' });
  server.registerTool('echo', { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  const steps = async (
    { n, ms }: { n: number; ms: number },
    ctx: { mcpReq: { _meta?: { progressToken?: string | number }; notify(n: unknown): Promise<void> } },
  ) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (let i = 1; i <= n; i++) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      if (token !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n } });
    }
    return { content: [{ type: 'text' as const, text: `${n} steps` }] };
  };
  const schema = z.object({ n: z.number(), ms: z.number() });
  // The same tool twice: annotated as safe to run again, and not (a client may not send that one again).
  server.registerTool('steps', { inputSchema: schema, annotations: { idempotentHint: true } }, steps as never);
  server.registerTool('steps-once', { inputSchema: schema }, steps as never);
  // The 2026-07-28 way to ask the client for input (multi round-trip requests): an input_required result, and
  // the call again with the answers. `deploy` asks an elicitation and echoes state; `haiku` asks sampling;
  // `roots` asks the roots; `pester` never stops asking.
  type Ctx = { mcpReq: { inputResponses?: Record<string, unknown>; requestState(): unknown } };
  const confirmation = z.object({ confirm: z.boolean() });
  server.registerTool('deploy', { inputSchema: z.object({ env: z.string() }) }, (async ({ env }: { env: string }, ctx: Ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
    if (answer?.confirm !== true) {
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: confirmation }) },
        requestState: `deploy:${env}:✓`,
      });
    }
    return { content: [{ type: 'text' as const, text: `deployed to ${env} (state ${String(ctx.mcpReq.requestState())})` }] };
  }) as never);
  server.registerTool('haiku', { inputSchema: z.object({}) }, (async (_args: unknown, ctx: Ctx) => {
    const answer = ctx.mcpReq.inputResponses?.poem as { content?: { text?: string } } | undefined;
    if (answer === undefined) {
      return inputRequired({
        inputRequests: {
          poem: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'a haiku' } }], maxTokens: 50 }),
        },
      });
    }
    return { content: [{ type: 'text' as const, text: `poem: ${answer.content?.text}` }] };
  }) as never);
  server.registerTool('roots', { inputSchema: z.object({}) }, (async (_args: unknown, ctx: Ctx) => {
    const answer = ctx.mcpReq.inputResponses?.roots as { roots?: Array<{ uri: string }> } | undefined;
    if (answer === undefined) return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
    return { content: [{ type: 'text' as const, text: (answer.roots ?? []).map((r) => r.uri).join(' ') }] };
  }) as never);
  // Parameters mirrored into Mcp-Param-* headers (SEP-2243): the SDK server checks them against the body.
  server.registerTool(
    'route',
    {
      inputSchema: z.object({
        region: z.string().meta({ 'x-mcp-header': 'Region' }),
        shard: z.number().int().meta({ 'x-mcp-header': 'Shard' }),
        q: z.string(),
      }),
    },
    async ({ region, shard, q }) => ({ content: [{ type: 'text', text: `${q} in ${region}/${shard}` }] }),
  );
  // A tool that adds a tool: the server's tool list changes, for listen().
  server.registerTool('grow', { inputSchema: z.object({ name: z.string() }) }, async ({ name }) => {
    server.registerTool(name, { inputSchema: z.object({}) }, async () => ({ content: [{ type: 'text', text: name }] }));
    return { content: [{ type: 'text', text: `added ${name}` }] };
  });
  server.registerTool('pester', { inputSchema: z.object({}) }, (async () =>
    inputRequired({ inputRequests: { again: inputRequired.elicit({ message: 'again?', requestedSchema: confirmation }) } })) as never);
  return server;
}

export interface Sdk2Http {
  url: string;
  port: number;
  /** Every request's method and headers, as they arrived. */
  seen: Array<{ method: string; headers: http.IncomingHttpHeaders; body: string }>;
  close(): Promise<void>;
}

/** An SDK 2.x server over HTTP: `modern` only, or `dual` era (legacy requests served statelessly). */
export async function sdk2Http(era: 'modern' | 'dual'): Promise<Sdk2Http> {
  const handler = createMcpHandler(() => sdk2Server(`sdk2-${era}`), { legacy: era === 'modern' ? 'reject' : 'stateless' });
  const seen: Sdk2Http['seen'] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    seen.push({ method: req.method ?? '', headers: req.headers, body });
    const headers = new Headers();
    for (const [key, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(key, value);
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method ?? 'GET',
      headers,
      signal: abort.signal,
      ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body }),
    });
    const response = await handler.fetch(request);
    await writeResponse(res, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await handler.close();
    },
  };
}

/** A web-standard Response (the SDK's handlers answer with one) written out on a node:http response. */
export async function writeResponse(res: http.ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body === null) return void res.end();
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
  } catch {
    // The client went away.
  }
  res.end();
}
