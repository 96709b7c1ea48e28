// Requests per second through `serve` (server-everything over stdio behind the bridge) against the same
// server speaking Streamable HTTP natively (its streamableHttp mode), with the same client (connect()),
// sequential and concurrent tools/call, runs interleaved. npm run bench runs it; `node dist/bench/serve.js`
// runs it alone.
import { fileURLToPath } from 'node:url';
import { connect } from '../lib/client/index.js';
import { serve } from '../lib/serve/index.js';
import { startEverything } from '../test/helpers/everything-http.js';
import { ROOT } from '../test/helpers/fixtures.js';
import { CALLS, interleaved } from './http.js';

export interface ServeRow {
  label: string;
  bridged: number;
  native: number;
}

const RUNS = 3;

export async function serveRoundTrips(): Promise<ServeRow[]> {
  const everything = await startEverything('streamableHttp');
  const bridge = await serve(
    { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'] },
    { log: () => undefined },
  );
  const bridged = await connect({ type: 'http', url: bridge.url! });
  const native = await connect({ type: 'http', url: everything.url });
  const calls = {
    bridged: (text: string) => bridged.request('tools/call', { name: 'echo', arguments: { message: text } }),
    native: (text: string) => native.request('tools/call', { name: 'echo', arguments: { message: text } }),
  };
  try {
    // Both answer alike, or the comparison means nothing.
    const [a, b] = await Promise.all([calls.bridged('same'), calls.native('same')]);
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`serve and the native server answer differently: ${JSON.stringify([a, b])}`);
    return await interleaved(calls, RUNS);
  } finally {
    await bridged.close();
    await native.close();
    await bridge.close();
    await everything.stop();
  }
}

export function serveTable(rows: ServeRow[]): string {
  const rate = (ms: number): string => Math.round((CALLS / ms) * 1000).toLocaleString('en');
  const lines = rows.map((r) => `| ${r.label} | ${rate(r.bridged)} | ${rate(r.native)} | ${(r.native / r.bridged).toFixed(2)}x |`);
  return ['| case | through serve, req/s | native HTTP, req/s | serve vs native (throughput) |', '| --- | ---: | ---: | ---: |', ...lines].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${serveTable(await serveRoundTrips())}\n`);
