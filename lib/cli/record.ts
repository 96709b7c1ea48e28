import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { CassetteWriter } from '../cassette/cassette.js';
import { isStdioServer } from '../client/config.js';
import { serverEnv } from '../client/stdio.js';
import { namedEntry } from './entry.js';
import { CliError, EXIT, parseOptions } from './io.js';

export const USAGE = `usage: mcp-frame record --out <cassette> [--no-redact] -- <command> [args...]
       mcp-frame record --out <cassette> [--no-redact] [--config <path>] [--input id=value] <server>`;

interface RecordArgs {
  out: string;
  command: string;
  args: string[];
  /** The server's whole environment. */
  env: NodeJS.ProcessEnv;
  cwd: string | undefined;
  redact: boolean;
}

async function parseRecordArgs(args: string[]): Promise<RecordArgs> {
  const dash = args.indexOf('--');
  const own = dash === -1 ? args : args.slice(0, dash);
  const { values, positionals } = parseOptions(
    own,
    {
      out: { type: 'string' },
      config: { type: 'string' },
      input: { type: 'string', multiple: true },
      'no-redact': { type: 'boolean', default: false },
    },
    USAGE,
  );
  const out = values.out as string | undefined;
  if (out === undefined) throw new CliError(`--out is required\n${USAGE}`, EXIT.usage);
  const redact = values['no-redact'] !== true;
  if (dash !== -1) {
    const [command, ...rest] = args.slice(dash + 1);
    if (command === undefined || positionals.length > 0 || values.config !== undefined) throw new CliError(USAGE, EXIT.usage);
    // A host starts this in place of the server, with the environment it means the server to have.
    return { out, command, args: rest, env: process.env, cwd: undefined, redact };
  }
  // The config a host would find, as `call` reads it.
  const server = await namedEntry(positionals, values, USAGE, 'record');
  const name = positionals[0]!;
  if (!isStdioServer(server)) throw new CliError(`server "${name}" is not a stdio server`, EXIT.config);
  // As `call` and connect() start it: the safe default environment plus the entry's own.
  return { out, command: server.command, args: server.args ?? [], env: serverEnv(server), cwd: server.cwd, redact };
}

/**
 * `mcp-frame record --out <cassette> -- <command> [args...]`: a transparent stdio proxy. A host starts it in
 * place of the server; bytes pass through unchanged both ways, stderr passes through, and every message is
 * appended to the cassette as it goes. Exits with the server's exit code.
 */
export async function recordCommand(argv: string[]): Promise<number> {
  const opts = await parseRecordArgs(argv);
  let writer: CassetteWriter;
  try {
    writer = new CassetteWriter(opts.out, { redact: opts.redact });
  } catch (err) {
    throw new CliError(`cannot write cassette ${opts.out}: ${(err as Error).message}`);
  }
  // In its own process group, as connect() starts servers: a signal reaches the server and whatever it started
  // (a wrapper such as npx leaves the real server a grandchild).
  const grouped = process.platform !== 'win32';
  // The handlers are in place before the server starts: a signal that comes at once still reaches its group.
  let server: { pid?: number | undefined; kill(signal: NodeJS.Signals): boolean } | undefined;
  const signalServer = (signal: NodeJS.Signals): void => {
    try {
      if (grouped && server?.pid !== undefined) process.kill(-server.pid, signal);
      else server?.kill(signal);
    } catch {
      // ESRCH: already gone.
    }
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => signalServer(signal));
  const child = spawn(opts.command, opts.args, {
    stdio: ['pipe', 'pipe', 'inherit'],
    cwd: opts.cwd,
    env: opts.env,
    detached: grouped,
    windowsHide: true,
  });
  server = child;
  const started = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(new CliError(`cannot start ${JSON.stringify(opts.command)}: ${err.code === 'ENOENT' ? 'command not found' : err.message}`)),
    );
  });
  await started.catch((err: unknown) => {
    writer.close();
    throw err;
  });
  // The host may close its end first, or the server may die first: neither is an error of the proxy's.
  child.stdin.on('error', () => undefined);
  const upstream = pipeline(process.stdin, writer.tap('client'), child.stdin).catch(() => undefined);
  const downstream = pipeline(child.stdout, writer.tap('server'), process.stdout).catch(() => undefined);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  await downstream;
  // The server is gone: stop reading the host's input, so that this process can end too.
  process.stdin.destroy();
  await upstream;
  writer.close();
  if (signal !== null) throw new CliError(`server was killed by ${signal}`, 1);
  return code ?? 1;
}
