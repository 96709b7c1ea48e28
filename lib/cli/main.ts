#!/usr/bin/env node
import { FrameError } from '../errors.js';
import { VERSION } from '../version.js';
import { authCommand, USAGE as AUTH_USAGE } from './auth.js';
import { bridgeCommand, USAGE as BRIDGE_USAGE } from './bridge.js';
import { callCommand, USAGE as CALL_USAGE } from './call.js';
import { checkCommand, USAGE as CHECK_USAGE } from './check.js';
import { checkConfigCommand, USAGE as CHECK_CONFIG_USAGE } from './check-config.js';
import { convertCommand, USAGE as CONVERT_USAGE } from './convert.js';
import { frameCommand, USAGE as FRAME_USAGE } from './frame.js';
import { recordCommand, USAGE as RECORD_USAGE } from './record.js';
import { replayCommand, USAGE as REPLAY_USAGE } from './replay.js';
import { serveCommand, USAGE as SERVE_USAGE } from './serve.js';
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

/** Each command resolves with its exit code, or anything else for 0; failures throw CliError. */
const COMMANDS: Record<string, (args: string[]) => Promise<unknown>> = {
  frame: frameCommand,
  call: (args) => callCommand(args, 'call'),
  tools: (args) => callCommand(args, 'tools'),
  resources: (args) => callCommand(args, 'resources'),
  prompts: (args) => callCommand(args, 'prompts'),
  convert: convertCommand,
  record: recordCommand,
  replay: replayCommand,
  check: checkCommand,
  bridge: bridgeCommand,
  serve: serveCommand,
  'check-config': checkConfigCommand,
  auth: authCommand,
};

/** Each command's own usage, for `<command> --help` and `help <command>`. */
const USAGES: Record<string, string> = {
  frame: FRAME_USAGE,
  call: CALL_USAGE,
  tools: CALL_USAGE,
  resources: CALL_USAGE,
  prompts: CALL_USAGE,
  convert: CONVERT_USAGE,
  record: RECORD_USAGE,
  replay: REPLAY_USAGE,
  check: CHECK_USAGE,
  bridge: BRIDGE_USAGE,
  serve: SERVE_USAGE,
  'check-config': CHECK_CONFIG_USAGE,
  auth: AUTH_USAGE,
};

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
    const usage = USAGES[args[0]];
    if (usage === undefined) {
      process.stderr.write(`mcp-frame: unknown command ${JSON.stringify(args[0])}\n${USAGE}\n`);
      return EXIT.usage;
    }
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (command !== undefined && USAGES[command] !== undefined && asksHelp(args)) {
    process.stdout.write(`${USAGES[command]}\n`);
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
  const run = COMMANDS[command];
  if (run === undefined) {
    process.stderr.write(`mcp-frame: unknown command ${JSON.stringify(command)}\n${USAGE}\n`);
    return EXIT.usage;
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
      await new Promise((resolve) => process.stderr.write(line, resolve));
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
