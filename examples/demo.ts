// A small MCP server built only on this package's streams: FrameDecoder on its input, FrameEncoder on its
// output. Tools: echo, add, and blob (a large, checkable base64 payload). server.ts runs it over stdio; tests
// also run it in process, over a pair of in-memory streams.
import { createHash } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
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

/** Answers the messages read from `input` on `output`; resolves when the input ends and the output is flushed. */
export async function serveDemo(input: Readable, output: Writable, log: (line: string) => void = () => undefined): Promise<void> {
  const encoder = new FrameEncoder();
  const decoder = new FrameDecoder({ onInvalid: 'skip' });
  decoder.on('invalid', (err: FrameError) => log(`demo server: skipped a bad line: ${err.code} ${err.message}`));
  const written = pipeline(encoder, output);
  for await (const msg of input.pipe(decoder)) {
    const reply = answer(msg as Json);
    if (reply !== undefined && !encoder.write(reply)) await new Promise((resolve) => encoder.once('drain', resolve));
  }
  encoder.end();
  await written;
}

/** The reply to one message; none for notifications and responses (this server sends no requests). */
function answer({ id, method, params }: Json): Json | undefined {
  if (typeof method !== 'string' || id === undefined) return undefined;
  try {
    return { jsonrpc: '2.0', id, result: handle(method, (params ?? {}) as Json) };
  } catch (err) {
    const code = err instanceof RpcFailure ? err.code : -32603;
    return { jsonrpc: '2.0', id, error: { code, message: (err as Error).message } };
  }
}
