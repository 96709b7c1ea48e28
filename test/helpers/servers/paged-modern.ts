// A 2026-07-28-only stdio server, written on node:readline and JSON alone: its tool list comes in two pages (the
// tool that declares an x-mcp-header is on the second), it logs for requests that ask (logLevel) without tagging
// the log message, and it serves subscriptions/listen: acknowledged at once, a tools list change sent on it
// whenever the tool `change` is called. With `legacy-refusal` as its argument it also refuses initialize the way a
// modern-only SDK server does (-32022 naming only 2026-07-28).
import { createInterface } from 'node:readline';

type Json = Record<string, unknown>;
const write = (msg: unknown): void => void process.stdout.write(`${JSON.stringify(msg)}\n`);
const SUB = 'io.modelcontextprotocol/subscriptionId';
const listens = new Set<unknown>();

const TOOLS = [
  [{ name: 'plain', inputSchema: { type: 'object' } }],
  [
    {
      name: 'route',
      inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, q: { type: 'string' } } },
    },
    { name: 'logs', inputSchema: { type: 'object' } },
    { name: 'change', inputSchema: { type: 'object' } },
    { name: 'slow', inputSchema: { type: 'object' } },
  ],
];

function handle(msg: Json): void {
  const params = (msg.params ?? {}) as Json;
  const meta = (params._meta ?? {}) as Json;
  const answer = (result: Json): void => write({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } });
  switch (msg.method) {
    case 'initialize':
      return write({
        jsonrpc: '2.0',
        id: msg.id,
        error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: '2025-11-25' } },
      });
    case 'server/discover':
      return answer({
        supportedVersions: ['2026-07-28'],
        capabilities: { tools: { listChanged: true }, logging: {} },
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'paged-modern', version: '1' } },
      });
    case 'tools/list': {
      const page = params.cursor === 'page-2' ? 1 : 0;
      return answer({ tools: TOOLS[page]!, ...(page === 0 ? { nextCursor: 'page-2' } : {}), ttlMs: 0, cacheScope: 'private' });
    }
    case 'subscriptions/listen': {
      listens.add(msg.id);
      const notifications = (params.notifications ?? {}) as Json;
      return write({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications, _meta: { [SUB]: msg.id } } });
    }
    case 'tools/call': {
      const args = (params.arguments ?? {}) as Json;
      if (params.name === 'logs') {
        // `before` ms, then the log message (for a request that asked), then `ms` more, then the answer.
        return void setTimeout(
          () => {
            if (meta['io.modelcontextprotocol/logLevel'] !== undefined)
              write({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `log for ${String(args.who)}` } });
            setTimeout(() => answer({ content: [{ type: 'text', text: `logged ${String(args.who)}` }] }), Number(args.ms ?? 30));
          },
          Number(args.before ?? 0),
        );
      }
      if (params.name === 'change') {
        for (const id of listens) write({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [SUB]: id } } });
        return answer({ content: [{ type: 'text', text: 'changed' }] });
      }
      if (params.name === 'slow') return;
      return answer({ content: [{ type: 'text', text: `${String(args.q)} in ${String(args.region)}` }] });
    }
    default:
      return write({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `Method not found: ${String(msg.method)}` } });
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === '') return;
  const msg = JSON.parse(line) as Json;
  if (msg.method === 'notifications/cancelled') return void listens.delete((msg.params as Json).requestId);
  if (msg.id !== undefined && typeof msg.method === 'string') handle(msg);
});
