// A legacy server for the gateway tests, named by its first argument: tools `echo`, `shared` (a name every peer
// has), `<name>-only` (a name no other peer has), `die` (exits), `hang` (answers only its cancellation, on stderr), `progress` (three progress
// notifications with the caller's token, then the result), `ask` (an elicitation to the client, its answer
// returned), and, unlisted, `whoami` (the `_meta` caller the gateway forwarded); tools listed two per page; one resource `peer://<name>/readme` and a template `peer://<name>/files/{path}`.
// With PEER_START_MS, it reads nothing for that long first (a slow start); with PEER_STATE, it appends
// every start to that file (to count restarts); PEER_EXTRA and PEER_PAGE below; with PEER_MUTE (methods, comma-separated), it never answers those.
import { appendFileSync } from 'node:fs';
import { serve, write } from './mini.js';

type Json = Record<string, unknown>;
const name = process.argv[2] ?? 'peer';
const TOOLS = ['echo', 'shared', 'die', 'hang', 'progress', 'ask', `${name}-only`].map((tool) => ({
  name: tool,
  description: `${tool} of ${name}`,
  inputSchema: { type: 'object' },
}));
// With PEER_EXTRA=n, n more tools `t1` .. `tn` (no calls), listed PEER_PAGE (2) a page.
for (let i = 1; i <= Number(process.env.PEER_EXTRA ?? 0); i++)
  TOOLS.push({ name: `t${i}`, description: `t${i} of ${name}`, inputSchema: { type: 'object' } });
const PAGE = Number(process.env.PEER_PAGE ?? 2);
let asked = 0;
const waiting = new Map<string, unknown>();

if (process.env.PEER_STATE !== undefined) appendFileSync(process.env.PEER_STATE, `${name} started\n`);

function call(msg: Json): unknown {
  const params = (msg.params ?? {}) as Json;
  const args = (params.arguments ?? {}) as Json;
  const text = (t: string) => ({ content: [{ type: 'text', text: t }] });
  switch (params.name) {
    case 'echo':
    case 'shared':
    case `${name}-only`:
      return text(`${name}: ${String(args.text ?? '')}`);
    case 'die':
      process.stderr.write(`${name} dies now\n`);
      process.exit(1);
      return undefined;
    case 'hang':
      process.stderr.write(`${name} hangs now\n`);
      return undefined;
    // Not listed: the request's _meta as it came (trace context and all).
    case 'meta':
      return text(JSON.stringify(params._meta ?? {}));
    // Not listed: what the gateway put in the request's _meta about its caller.
    case 'whoami':
      return text(JSON.stringify(((params._meta ?? {}) as Json)['mcp-frame/caller'] ?? null));
    case 'progress': {
      const token = ((params._meta ?? {}) as Json).progressToken;
      for (let i = 1; i <= 3; i++)
        write({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: i, total: 3 } });
      return text(`${name}: 3 steps`);
    }
    case 'ask': {
      const id = `ask-${++asked}`;
      waiting.set(id, msg.id);
      write({
        jsonrpc: '2.0',
        id,
        method: 'elicitation/create',
        params: { message: `${name} asks`, requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } },
      });
      return undefined;
    }
    default:
      write({ jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: `Unknown tool: ${String(params.name)}` } });
      return undefined;
  }
}

const mute = new Set((process.env.PEER_MUTE ?? '').split(',').filter(Boolean));

function handle(msg: Json): unknown {
  const params = (msg.params ?? {}) as Json;
  if (mute.has(msg.method as string)) return undefined;
  if (msg.method === 'tools/list') {
    const start = typeof params.cursor === 'string' ? Number(params.cursor) : 0;
    const page = TOOLS.slice(start, start + PAGE);
    return { tools: page, ...(start + PAGE < TOOLS.length ? { nextCursor: String(start + PAGE) } : {}) };
  }
  if (msg.method === 'tools/call') return call(msg);
  if (msg.method === 'resources/list') return { resources: [{ uri: `peer://${name}/readme`, name: 'readme' }] };
  if (msg.method === 'resources/templates/list') return { resourceTemplates: [{ uriTemplate: `peer://${name}/files/{path}`, name: 'files' }] };
  if (msg.method === 'resources/read') return { contents: [{ uri: params.uri, text: `${name} read ${String(params.uri)}` }] };
  if (msg.method === 'prompts/list') return { prompts: [{ name: 'greet' }] };
  if (msg.method === 'prompts/get') return { messages: [{ role: 'user', content: { type: 'text', text: `${name} greets` } }] };
  return {};
}

function other(msg: Json): void {
  if (msg.method === 'notifications/cancelled') {
    process.stderr.write(`${name} cancelled ${JSON.stringify((msg.params as Json).requestId)}\n`);
    return;
  }
  // The client's answer to an elicitation: the call that asked completes with it.
  const callId = typeof msg.id === 'string' ? waiting.get(msg.id) : undefined;
  if (callId === undefined) return;
  waiting.delete(msg.id as string);
  write({ jsonrpc: '2.0', id: callId, result: { content: [{ type: 'text', text: `${name} was told ${JSON.stringify(msg.result ?? msg.error)}` }] } });
}

const start = (): void =>
  serve(name, handle, {
    onOther: other,
    initializeCapabilities: { tools: { listChanged: true }, resources: {}, prompts: {} },
    // With PEER_CHANGED, it says its tool list changed right after its initialize answer (as some servers do).
    ...(process.env.PEER_CHANGED === undefined
      ? {}
      : { afterInitialize: () => write({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }) }),
  });
const delay = Number(process.env.PEER_START_MS ?? 0);
if (delay > 0) setTimeout(start, delay);
else start();
