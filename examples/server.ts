// A small MCP server over stdio, built only on this package's streams: FrameDecoder on stdin, FrameEncoder on
// stdout. Tools: echo, add, and blob (a large, checkable base64 payload). Run: node dist/examples/server.js
import { createHash } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { FrameDecoder, FrameEncoder, type FrameError } from '../lib/index.js';
import { VERSION } from '../lib/version.js';

const SUPPORTED_VERSIONS = ['2025-06-18', '2025-03-26', '2024-11-05'];

type Json = Record<string, unknown>;
class ToolError extends Error {}
class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const tools = [
  {
    name: 'echo',
    description: 'Returns its text unchanged.\nUseful to check that any text survives the round trip.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'add',
    description: 'Adds two numbers.',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  },
  {
    name: 'blob',
    description: 'Returns `bytes` deterministic pseudo-random bytes as a base64 resource, with their SHA-256.',
    inputSchema: { type: 'object', properties: { bytes: { type: 'integer', minimum: 0, maximum: 67108864 } } },
  },
];

/** The bytes the blob tool returns: the same for the same size, so that a client can check them. */
export function blobBytes(size: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = 0x9e3779b9;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

function callTool(name: unknown, args: Json): Json {
  switch (name) {
    case 'echo':
      if (typeof args.text !== 'string') throw new ToolError('echo needs a string "text"');
      return { content: [{ type: 'text', text: args.text }] };
    case 'add':
      if (typeof args.a !== 'number' || typeof args.b !== 'number') throw new ToolError('add needs numbers "a" and "b"');
      return { content: [{ type: 'text', text: String(args.a + args.b) }], structuredContent: { sum: args.a + args.b } };
    case 'blob': {
      const size = args.bytes === undefined ? 1024 * 1024 : args.bytes;
      if (!Number.isSafeInteger(size) || (size as number) < 0 || (size as number) > 64 * 1024 * 1024)
        throw new ToolError('blob needs "bytes" from 0 to 67108864');
      const bytes = blobBytes(size as number);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      return {
        content: [
          { type: 'text', text: `${bytes.length} bytes, sha256 ${sha256}` },
          {
            type: 'resource',
            resource: { uri: `blob://demo/${bytes.length}`, mimeType: 'application/octet-stream', blob: bytes.toString('base64') },
          },
        ],
        structuredContent: { bytes: bytes.length, sha256 },
      };
    }
    default:
      throw new RpcFailure(-32602, `Unknown tool: ${String(name)}`);
  }
}

function handle(method: string, params: Json): unknown {
  switch (method) {
    case 'initialize': {
      const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : '';
      return {
        protocolVersion: SUPPORTED_VERSIONS.includes(asked) ? asked : SUPPORTED_VERSIONS[0],
        capabilities: { tools: {} },
        serverInfo: { name: 'mcp-frame-demo', version: VERSION },
        instructions: 'A demo server for mcp-frame: echo, add and blob.',
      };
    }
    case 'ping':
      return {};
    case 'tools/list':
      return { tools };
    case 'tools/call':
      try {
        return callTool(params.name, (params.arguments ?? {}) as Json);
      } catch (err) {
        if (err instanceof ToolError) return { content: [{ type: 'text', text: err.message }], isError: true };
        throw err;
      }
    default:
      throw new RpcFailure(-32601, `Method not found: ${method}`);
  }
}

const encoder = new FrameEncoder();
const decoder = new FrameDecoder({ onInvalid: 'skip' });
decoder.on('invalid', (err: FrameError) => process.stderr.write(`demo server: skipped a bad line: ${err.code} ${err.message}\n`));
const output = pipeline(encoder, process.stdout);
process.stderr.write(`mcp-frame demo server ${VERSION} ready on stdio\n`);

for await (const msg of process.stdin.pipe(decoder)) {
  const { id, method, params } = msg as Json;
  if (typeof method !== 'string') continue; // a response or something else: this server sends no requests
  if (id === undefined) continue; // notifications need no answer
  let reply: Json;
  try {
    reply = { jsonrpc: '2.0', id, result: handle(method, (params ?? {}) as Json) };
  } catch (err) {
    const code = err instanceof RpcFailure ? err.code : -32603;
    reply = { jsonrpc: '2.0', id, error: { code, message: (err as Error).message } };
  }
  if (!encoder.write(reply)) await new Promise((resolve) => encoder.once('drain', resolve));
}
encoder.end();
await output;
