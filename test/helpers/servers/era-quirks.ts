// Servers with era quirks, for the handshake tests. `legacy-only`: answers server/discover with -32022 naming only
// legacy versions (2025-06-18), and serves initialize at them. `slow-dual`: starts slowly (its first line is read
// after 600 ms), fixes its era on the first request it reads (a discover makes it modern, as the Python SDK
// does), then refuses initialize with -32022 naming 2026-07-28 and answers modern requests.
import { createInterface } from 'node:readline';

type Json = Record<string, unknown>;
const write = (msg: unknown): void => void process.stdout.write(`${JSON.stringify(msg)}\n`);
const mode = process.argv[2];
let era: 'modern' | 'legacy' | undefined;
const lines: string[] = [];
let ready = mode !== 'slow-dual';
if (!ready)
  setTimeout(() => {
    ready = true;
    for (const line of lines.splice(0)) handle(line);
  }, 600);

function handle(line: string): void {
  const msg = JSON.parse(line) as Json;
  if (msg.id === undefined) return;
  const reply = (result: unknown): void => write({ jsonrpc: '2.0', id: msg.id, result });
  const refuse = (supported: string[]): void =>
    write({ jsonrpc: '2.0', id: msg.id, error: { code: -32022, message: 'Unsupported protocol version', data: { supported } } });
  if (mode === 'legacy-only') {
    if (msg.method === 'server/discover') return refuse(['2025-06-18', '2025-03-26']);
    if (msg.method === 'initialize') {
      const asked = (msg.params as Json).protocolVersion;
      return reply({ protocolVersion: asked, capabilities: { tools: {} }, serverInfo: { name: `legacy-only asked ${String(asked)}`, version: '1' } });
    }
    return reply({ tools: [] });
  }
  era ??= msg.method === 'server/discover' ? 'modern' : 'legacy';
  if (msg.method === 'server/discover') {
    if (era !== 'modern') return write({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    return reply({
      supportedVersions: ['2026-07-28'],
      capabilities: { tools: {} },
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'slow-dual', version: '1' } },
    });
  }
  if (msg.method === 'initialize') {
    if (era === 'modern') return refuse(['2026-07-28']);
    return reply({ protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'slow-dual', version: '1' } });
  }
  return reply({ tools: [{ name: `${era}-tool`, inputSchema: { type: 'object' } }] });
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === '') return;
  if (ready) handle(line);
  else lines.push(line);
});
