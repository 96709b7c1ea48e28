import {
  ConfigError,
  configServerNames,
  findConfig,
  listNames,
  parseConfig,
  readConfigText,
  type ServerConfig,
  serverNamed,
} from '../client/config.js';
import { connect, RpcError, type Connection, type FrameTrace } from '../client/connection.js';
import { type FrameError, printable, printableJson, safeLine } from '../errors.js';
import { jsonErrorPosition } from '../json-position.js';
import { ConnectionError } from '../client/errors.js';
import { CliError, parseInputs, parseOptions, positiveInteger, writeStdout } from './io.js';

const USAGE = 'usage: mcp-frame call <server> [method [params-json]] [--config path] [--input id=value]... [--trace] [--timeout ms]';

interface CallArgs {
  server: string;
  method: string | undefined;
  params: unknown;
  /** The config named with --config; undefined: found as hosts find theirs. */
  config: string | undefined;
  /** Values for `${input:id}` in a VS Code config. */
  inputs: Record<string, string>;
  trace: boolean;
  timeoutMs: number | undefined;
}

export function parseCallArgs(args: string[]): CallArgs {
  const { values, positionals } = parseOptions(
    args,
    {
      config: { type: 'string' },
      input: { type: 'string', multiple: true },
      trace: { type: 'boolean', default: false },
      timeout: { type: 'string' },
    },
    USAGE,
  );
  const [server, method, paramsText, ...extra] = positionals;
  if (server === undefined || extra.length > 0) throw new CliError(USAGE, 2);
  const config = values.config as string | undefined;
  const inputs = parseInputs(values.input as unknown as string[] | undefined, USAGE);
  const trace = values.trace === true;
  const timeoutMs = positiveInteger(values.timeout as string | undefined, '--timeout', USAGE);
  let params: unknown;
  if (paramsText !== undefined) {
    try {
      params = JSON.parse(paramsText);
    } catch {
      const at = jsonErrorPosition(paramsText);
      throw new CliError(`params are not JSON${at ? ` (column ${at.column})` : ''}: ${paramsText.slice(0, 80)}`, 2);
    }
    // JSON-RPC allows arrays, but every MCP method takes an object: say so now, not after a server's timeout.
    if (typeof params !== 'object' || params === null || Array.isArray(params)) {
      throw new CliError(
        `params must be a JSON object, got ${Array.isArray(params) ? 'an array' : params === null ? 'null' : `a ${typeof params}`}\n${USAGE}`,
        2,
      );
    }
  }
  return { server, method, params, config, inputs, trace, timeoutMs };
}

/** Every tool, following nextCursor through the pages. */
async function listTools(connection: Connection): Promise<Array<{ name: string; description?: string }>> {
  const tools: Array<{ name: string; description?: string }> = [];
  let cursor: string | undefined;
  do {
    const page = (await connection.request('tools/list', cursor === undefined ? {} : { cursor })) as {
      tools?: Array<{ name: string; description?: string }>;
      nextCursor?: string;
    };
    tools.push(...(page.tools ?? []));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

function describeTrace(t: FrameTrace): string {
  return `${t.direction === 'send' ? '→' : '←'} ${t.bytes} B ${t.preview}\n`;
}

/**
 * The entry of the server asked for, from --config or the config a host would find (`./.mcp.json`, then
 * `./.vscode/mcp.json`, said on stderr). Only that entry is read: a variable another entry needs does not
 * stop this one.
 */
async function configEntry(opts: CallArgs): Promise<ServerConfig> {
  const path = opts.config ?? (await findConfig());
  if (path === undefined) throw new CliError('no config: neither ./.mcp.json nor ./.vscode/mcp.json exists; name one with --config');
  if (opts.config === undefined) process.stderr.write(`mcp-frame call: using ${path}\n`);
  try {
    const text = await readConfigText(path);
    const entry = serverNamed(parseConfig(text, path, { server: opts.server, inputs: opts.inputs }), opts.server);
    if (entry === undefined) throw new CliError(`no server "${opts.server}" in ${path}; it has: ${listNames(configServerNames(text, path))}`);
    return entry;
  } catch (err) {
    throw err instanceof ConfigError ? new CliError(err.message) : err;
  }
}

/** `mcp-frame call <server> [method [params-json]]` */
export async function callCommand(args: string[]): Promise<void> {
  const opts = parseCallArgs(args);
  const entry = await configEntry(opts);
  let connection: Connection | undefined;
  // Interrupted, the servers are closed first (stdin, SIGTERM, SIGKILL), so that none is left running.
  const onSignal = (signal: NodeJS.Signals): void => {
    const code = signal === 'SIGINT' ? 130 : 143;
    void (connection?.close() ?? Promise.resolve()).finally(() => process.exit(code));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const listen = (c: Connection): void => {
      c.on('invalid', (err: FrameError) =>
        process.stderr.write(`mcp-frame call: skipped output from the server that is not a message: ${err.code}: ${err.message}: ${err.preview}\n`),
      );
      if (opts.trace) {
        c.on('frame', (t: FrameTrace) => process.stderr.write(describeTrace(t)));
        c.on('stderr', (line: string) => process.stderr.write(`[${opts.server} stderr] ${safeLine(line)}\n`));
        c.on('reconnecting', (r: { attempt: number; waitMs: number; reason: string }) =>
          process.stderr.write(`reconnecting to ${opts.server} (attempt ${r.attempt}, in ${r.waitMs} ms): ${safeLine(r.reason)}\n`),
        );
        c.on('reconnected', (r: { attempt: number }) => process.stderr.write(`reconnected to ${opts.server} after ${r.attempt} attempts\n`));
      }
    };
    const timeouts = opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs, requestTimeoutMs: opts.timeoutMs };
    connection = await connect(entry, {
      name: opts.server,
      onSpawn: (c) => {
        connection = c;
        listen(c);
      },
      ...timeouts,
    }).catch((err: unknown) => {
      throw err instanceof ConnectionError ? new CliError(err.message) : err;
    });
    const c = connection;
    const init = c.initializeResult as { protocolVersion: string; serverInfo?: { name?: string; version?: string } };
    const info = init.serverInfo;
    process.stderr.write(
      `connected to ${safeLine(`${info?.name ?? opts.server} ${info?.version ?? ''}`)} (protocol ${safeLine(String(init.protocolVersion))}, pid ${c.pid})\n`,
    );
    if (opts.method === undefined) {
      const tools = await listTools(c);
      const names = tools.map((t) => printable(String(t.name)));
      const width = Math.max(0, ...names.map((n) => n.length));
      const lines = tools.map((t, i) => `${names[i]!.padEnd(width)}  ${printable(String(t.description ?? '').split('\n')[0]!)}`.trimEnd());
      await writeStdout(`${lines.join('\n')}${lines.length > 0 ? '\n' : ''}`);
    } else {
      const result = await c.request(opts.method, opts.params);
      await writeStdout(`${printableJson(result, 2)}\n`);
    }
  } catch (err) {
    if (err instanceof RpcError)
      throw new CliError(`server "${opts.server}" answered ${opts.method ?? 'tools/list'} with error ${err.code}: ${safeLine(err.message)}`);
    if (err instanceof ConnectionError && err.code === 'TIMEOUT') {
      // The server did not answer in time, and may not leave in time either: close it on the way out, not
      // before it (stdin now; its process group gets SIGTERM when this process exits).
      void connection?.close();
      connection = undefined;
      throw new CliError(err.message, 1, { exitNow: true });
    }
    if (err instanceof ConnectionError) throw new CliError(err.message);
    throw err;
  } finally {
    await connection?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
