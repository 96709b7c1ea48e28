import { pipeline } from 'node:stream/promises';
import { Cassette, CassetteError } from '../cassette/cassette.js';
import { CliError, EXIT, parseOptions } from './io.js';

export const USAGE = 'usage: mcp-frame replay <cassette> [--strict-order] [--pace]';

/**
 * `mcp-frame replay <cassette>`: plays the server side of a recorded session over stdio, one write a frame as
 * the server wrote them (with --pace, at the recorded delays). A request the cassette cannot answer gets a
 * JSON-RPC error at once and a line on stderr.
 */
export async function replayCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseOptions(
    args,
    { 'strict-order': { type: 'boolean', default: false }, pace: { type: 'boolean', default: false } },
    USAGE,
  );
  const [path, ...extra] = positionals;
  if (path === undefined || extra.length > 0) throw new CliError(USAGE, EXIT.usage);
  const cassette = await Cassette.load(path).catch((err: unknown) => {
    throw err instanceof CassetteError ? new CliError(err.message) : err;
  });
  const server = cassette.replay({
    strictOrder: values['strict-order'] === true,
    pace: values.pace === true,
    onMiss: ({ method, id, reason }) =>
      process.stderr.write(`mcp-frame replay: no recorded answer for ${method} (id ${JSON.stringify(id)}): ${reason}\n`),
  });
  server.on('invalid', (err: { code: string; message: string }) =>
    process.stderr.write(`mcp-frame replay: skipped a line that is not a message: ${err.code}: ${err.message}\n`),
  );
  await pipeline(process.stdin, server, process.stdout).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}
