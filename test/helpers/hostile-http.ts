// A Streamable HTTP server for hostile-server tests, on plain node:http and written without the code under
// test: every request goes to a handler after its body is read; legacyHttp() answers the handshake and ping.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

/** A server whose every request goes to `handler`, after its body has been read. */
export async function hostile(handler: Handler): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    res.on('error', () => undefined);
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    handler(req, res, Buffer.concat(chunks).toString('utf8'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export const json = (res: http.ServerResponse, msg: unknown, headers: http.OutgoingHttpHeaders = {}): void =>
  void res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(msg));

const INIT_RESULT = { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1' } };

/**
 * A legacy Streamable HTTP server: initialize (with a session), ping and notifications answered; the rest to
 * `other`, a GET to `get` (405 without it), a DELETE answered unless `deaf` says not.
 */
export function legacyHttp(other: Handler, get?: Handler, deaf: { toDelete?: boolean } = {}): Handler {
  return (req, res, body) => {
    if (req.method === 'DELETE') return deaf.toDelete ? undefined : void res.writeHead(200).end();
    if (req.method === 'GET') return get === undefined ? void res.writeHead(405).end() : get(req, res, body);
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.method === 'server/discover') return void res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
    if (msg.method === 'initialize') return json(res, { jsonrpc: '2.0', id: msg.id, result: INIT_RESULT }, { 'mcp-session-id': 'sess-1' });
    if (msg.id === undefined) return void res.writeHead(202).end();
    if (msg.method === 'ping') return json(res, { jsonrpc: '2.0', id: msg.id, result: {} });
    other(req, res, body);
  };
}
