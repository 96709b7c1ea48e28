#!/usr/bin/env node
import { FrameError } from '../errors.js';
import { VERSION } from '../version.js';
import { CliError, EXIT } from './io.js';

const USAGE = `usage: mcp-frame <command> [args]

commands (everyday ones first):
  call <server> [method [params-json] | <tool> --arg key=value...] [--config path] [--input id=value]
       [--trace] [--timeout ms] [--json]          (or: call [...] -e KEY=VALUE -- <command> [args...])
                             connect to a server; list its tools, call a method, or call a tool
  tools | resources | prompts <server> [uri | name]   (or: -- <command> [args...])
                             list a server's tools, resources (and templates) or prompts; read a
                             resource, or get a prompt (--arg key=value)
  bridge <server> [--config path]   (or: --url <url> [--header 'Name: value']...)
                             a stdio server that forwards everything to a remote Streamable HTTP server
  serve [--port n] [--socket path] [--token-env VAR] [--allow-origin o]... -- <command> [args...]
        (or: serve <server> [--config path])
                             offer a stdio server over Streamable HTTP (/mcp), legacy SSE (/sse) and a
                             local socket, one server process per session; 'serve --help' lists options
  auth status [server|url] | auth login <server|url> | auth logout <server|url>
                             what the command line is signed in to (never the tokens), sign in, sign out
  record --out <cassette> -- <command> [args...]   (or: --config <path> <server>)
                             run a stdio server behind a transparent proxy that records every message
  replay <cassette> [--strict-order] [--pace]
                             play the server side of a recorded session over stdio
  check [file | -] [--framing <framing> | cassette] [--json]
                             report on a captured stream: counts, errors with positions, unmatched ids
  convert --from <framing> --to <framing> [--skip-invalid] [--validate] [--max-bytes n]
                             re-frame stdin to stdout (ndjson, content-length, sse)
  frame [fixture.json | case-folder | -]
                             frame each message of a fixture; prints {"frames": [...], "parsed": [...]}
  check-config [path] [--input id=value]...
                             report every problem of a config file at once (default: the one call would use)
  help [command]             this text, or a command's own (as does <command> --help)
  --version                  the version of mcp-frame
  --use-env-proxy            (any command) remote servers and sign-in through HTTPS_PROXY / HTTP_PROXY, but
                             NO_PROXY's hosts, as NODE_USE_ENV_PROXY=1 does`;

/** A command: what it runs (resolving with its exit code, or anything else for 0; failures throw CliError) and its usage. */
interface Command {
  run: (args: string[]) => Promise<unknown>;
  usage: string;
}

/**
 * Each command's module, loaded when that command runs (or its help is asked for): `mcp-frame --version` or
 * `convert` does not load the gateway, the HTTP client or the sign-in flow.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  frame: async () => {
    const { frameCommand, USAGE } = await import('./frame.js');
    return { run: frameCommand, usage: USAGE };
  },
  call: () => callAs('call'),
  tools: () => callAs('tools'),
  resources: () => callAs('resources'),
  prompts: () => callAs('prompts'),
  convert: async () => {
    const { convertCommand, USAGE } = await import('./convert.js');
    return { run: convertCommand, usage: USAGE };
  },
  record: async () => {
    const { recordCommand, USAGE } = await import('./record.js');
    return { run: recordCommand, usage: USAGE };
  },
  replay: async () => {
    const { replayCommand, USAGE } = await import('./replay.js');
    return { run: replayCommand, usage: USAGE };
  },
  check: async () => {
    const { checkCommand, USAGE } = await import('./check.js');
    return { run: checkCommand, usage: USAGE };
  },
  bridge: async () => {
    const { bridgeCommand, USAGE } = await import('./bridge.js');
    return { run: bridgeCommand, usage: USAGE };
  },
  serve: async () => {
    const { serveCommand, USAGE } = await import('./serve.js');
    return { run: serveCommand, usage: USAGE };
  },
  'check-config': async () => {
    const { checkConfigCommand, USAGE } = await import('./check-config.js');
    return { run: checkConfigCommand, usage: USAGE };
  },
  auth: async () => {
    const { authCommand, USAGE } = await import('./auth.js');
    return { run: authCommand, usage: USAGE };
  },
};

async function callAs(action: 'call' | 'tools' | 'resources' | 'prompts'): Promise<Command> {
  const { callCommand, USAGE } = await import('./call.js');
  return { run: (args) => callCommand(args, action), usage: USAGE };
}

/** The distance between two words in single-character edits (insert, delete, replace, swap of neighbours). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/** `mcp-frame: unknown command "srve"`, with the command meant when one is near (at most two edits). */
function unknownCommand(command: string): string {
  const near = Object.keys(COMMANDS)
    .map((name) => ({ name, distance: editDistance(command.toLowerCase(), name) }))
    .filter((c) => c.distance <= Math.min(2, Math.max(1, c.name.length - 2)))
    .sort((x, y) => x.distance - y.distance)[0];
  const hint = near === undefined ? '' : ` (did you mean '${near.name}'?)`;
  return `mcp-frame: unknown command ${JSON.stringify(command)}${hint}\n${USAGE}\n`;
}

/** `--help` or `-h` among a command's own arguments (before any `--`, after which they are the server's). */
function asksHelp(args: string[]): boolean {
  const dash = args.indexOf('--');
  return (dash === -1 ? args : args.slice(0, dash)).some((a) => a === '--help' || a === '-h');
}

/**
 * `--use-env-proxy` (before any `--`), for every command: HTTPS_PROXY, HTTP_PROXY and NO_PROXY are honoured, as
 * NODE_USE_ENV_PROXY=1 makes them (see lib/client/proxy.ts); the flag is taken out of the command's arguments.
 */
function takeProxyFlag(argv: string[]): string[] {
  const dash = argv.indexOf('--');
  const own = dash === -1 ? argv : argv.slice(0, dash);
  if (!own.includes('--use-env-proxy')) return argv;
  process.env.NODE_USE_ENV_PROXY = '1';
  return [...own.filter((a) => a !== '--use-env-proxy'), ...(dash === -1 ? [] : argv.slice(dash))];
}

export async function main(given: string[]): Promise<number> {
  const argv = takeProxyFlag(given);
  const [command, ...args] = argv;
  if (command === 'help' && args[0] !== undefined) {
    const load = Object.hasOwn(COMMANDS, args[0]) ? COMMANDS[args[0]] : undefined;
    if (load === undefined) {
      process.stderr.write(unknownCommand(args[0]));
      return EXIT.usage;
    }
    process.stdout.write(`${(await load()).usage}\n`);
    return 0;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process[command === undefined ? 'stderr' : 'stdout'].write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  const load = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (load === undefined) {
    process.stderr.write(unknownCommand(command));
    return EXIT.usage;
  }
  const { run, usage } = await load();
  if (asksHelp(args)) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  try {
    const code = await run(args);
    return typeof code === 'number' ? code : 0;
  } catch (err) {
    if (err instanceof CliError) {
      // With --json, errors are JSON objects too, one a line, for scripts.
      const line = args.includes('--json')
        ? `${JSON.stringify({ error: { command, message: err.message, exitCode: err.exitCode } })}\n`
        : `mcp-frame ${command}: ${err.message}\n`;
      if (!err.logged) await new Promise((resolve) => process.stderr.write(line, resolve));
      if (err.exitNow) process.exit(err.exitCode);
      return err.exitCode;
    }
    if (err instanceof FrameError) {
      process.stderr.write(`mcp-frame ${command}: ${err.code}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

// A reader that went away (`| head`) closes stdout: writes then fail with EPIPE, which each command takes as the
// end of its output (writeStdout resolves, a pipeline ends). Without a listener, the stream's 'error' would end
// the process with a stack trace. Other errors reach the commands through their own writes and pipelines.
process.stdout.on('error', () => undefined);

process.exitCode = await main(process.argv.slice(2));
