// A minimal MCP responder for the misbehaving test servers, written on node:readline and JSON alone, so
// that these servers do not depend on the code under test.
import { createInterface } from 'node:readline';

type Json = Record<string, unknown>;
export type Handler = (msg: Json) => unknown;

export function write(msg: unknown): void {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

export const initializeResult = (name: string): Json => ({
  protocolVersion: '2025-06-18',
  capabilities: { tools: {} },
  serverInfo: { name, version: '1.0.0' },
});

/**
 * Answers initialize and ping, refuses the modern era's `server/discover` probe as a legacy SDK server does
 * (-32601; with `ignoreProbe`, not at all, as a server that drops unknown methods), and passes every other
 * request to `handle`, whose return value (if not undefined) is sent as the result. Notifications and
 * responses go to `onOther`.
 */
export function serve(
  name: string,
  handle: Handler = () => undefined,
  options: {
    onEnd?: () => void;
    onOther?: (msg: Json) => void;
    ignoreProbe?: boolean;
    initializeCapabilities?: Json;
    /** Called once the initialize answer is written (to send something right after it). */
    afterInitialize?: () => void;
  } = {},
): void {
  const rl = createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    if (line.trim() === '') return;
    const msg = JSON.parse(line) as Json;
    if (msg.id === undefined || typeof msg.method !== 'string') return options.onOther?.(msg);
    if (msg.method === 'initialize') {
      const result = initializeResult(name);
      if (options.initializeCapabilities !== undefined) result.capabilities = options.initializeCapabilities;
      write({ jsonrpc: '2.0', id: msg.id, result });
      return options.afterInitialize?.();
    }
    if (msg.method === 'ping') return write({ jsonrpc: '2.0', id: msg.id, result: {} });
    if (msg.method === 'server/discover') {
      if (options.ignoreProbe) return;
      return write({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    }
    const result = handle(msg);
    if (result !== undefined) write({ jsonrpc: '2.0', id: msg.id, result });
  });
  rl.on('close', () => (options.onEnd ?? (() => process.exit(0)))());
}
