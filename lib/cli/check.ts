import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { CassetteError } from '../cassette/cassette.js';
import { checkCassetteStream, checkStream, formatReport, type CheckReport } from '../cassette/check.js';
import { FRAMING_NAMES, isFramingName, type FramingName } from '../framings/index.js';
import { CliError, EXIT, parseOptions, writeStdout } from './io.js';

export const USAGE = `usage: mcp-frame check [file | -] [--framing ${[...FRAMING_NAMES, 'cassette'].join(' | ')}] [--json]`;

/**
 * The format of a captured file, from a peek at its start: a cassette (JSON Lines whose first line has "from"
 * and "t"), Content-Length headers, an event stream (`event:`, `data:`, `id:` or a comment first), else NDJSON.
 */
async function detectFormat(path: string): Promise<'cassette' | FramingName> {
  const handle = await open(path, 'r');
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(4096), 0, 4096, 0);
    const start = buffer.toString('utf8', 0, bytesRead).replace(/^\uFEFF/, '');
    const first = start.split('\n')[0]?.trim() ?? '';
    if (/^\{"from":\s*"(client|server)",\s*"t":/.test(first)) return 'cassette';
    if (/^content-(length|type)\s*:/i.test(first)) return 'content-length';
    if (/^(event|data|id|retry)\s*:|^:/.test(first)) return 'sse';
    return 'ndjson';
  } finally {
    await handle.close();
  }
}

/**
 * `mcp-frame check [file | -] [--framing <framing>]`: reads a captured stream (or a cassette) and reports its
 * message counts, every framing or JSON-RPC error with its position, the largest message, CRLF or a BOM,
 * responses that match no request and requests never answered. Exits 0 on a clean stream, 1 otherwise.
 */
export async function checkCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions(args, { framing: { type: 'string' }, json: { type: 'boolean', default: false } }, USAGE);
  const [path, ...extra] = positionals;
  if (extra.length > 0) throw new CliError(USAGE, EXIT.usage);
  const stdin = path === undefined || path === '-';
  let format = values.framing as string | undefined;
  if (format !== undefined && format !== 'cassette' && !isFramingName(format)) {
    throw new CliError(`unknown framing ${JSON.stringify(format)}\n${USAGE}`, EXIT.usage);
  }
  if (!stdin) {
    try {
      format ??= await detectFormat(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new CliError(`cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
    }
  }
  let report: CheckReport;
  if (format === 'cassette') {
    try {
      report = await checkCassetteStream(stdin ? process.stdin : createReadStream(path), stdin ? 'stdin' : path);
    } catch (err) {
      throw err instanceof CassetteError ? new CliError(err.message) : err;
    }
  } else {
    report = await checkStream(stdin ? process.stdin : createReadStream(path), (format ?? 'ndjson') as FramingName);
  }
  await writeStdout(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  return report.ok ? 0 : 1;
}
