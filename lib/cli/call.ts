import { isObject } from '../jsonrpc.js';
import { basename } from 'node:path';
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
import { type Connection, connect, type FrameTrace, RpcError } from '../client/connection.js';
import { ConnectionError } from '../client/errors.js';
import { type FrameError, printable, printableJson, safeLine } from '../errors.js';
import { jsonErrorPosition } from '../json-position.js';
import { AUTH_FLAGS, type AuthFlags, authFlags, cliAuth } from './auth.js';
import { CliError, EXIT, keyValues, parseOptions, positiveInteger, writeStdout } from './io.js';

const USAGE = `usage: mcp-frame call <server> [method [params-json]] [options]
       mcp-frame call <server> <tool> --arg key=value... [options]
       mcp-frame call [method [params-json] | <tool> --arg key=value...] [options] -- <command> [args...]
       mcp-frame tools | resources | prompts <server> [options]      (or: [options] -- <command> [args...])
options: --config path  --input id=value  -e KEY=VALUE (with --)  --trace  --timeout ms  --json
sign-in (a remote server that asks for it): --no-browser  --callback-port n  --auth-timeout ms`;

/** What the command does once connected. */
export type CallAction = 'call' | 'tools' | 'resources' | 'prompts';

export interface CallArgs {
  /** The server's name in the config; undefined for an ad hoc server (`-- <command>`). */
  server: string | undefined;
  /** `-- <command> [args...]`: a server started without a config. */
  command: string[] | undefined;
  /** `-e KEY=VALUE` for an ad hoc server. */
  env: Record<string, string>;
  method: string | undefined;
  params: unknown;
  /** `--arg key=value`: the method is a tool, called with these arguments. */
  toolArgs: Record<string, unknown> | undefined;
  /** The config named with --config; undefined: found as hosts find theirs. */
  config: string | undefined;
  /** Values for `${input:id}` in a VS Code config. */
  inputs: Record<string, string>;
  trace: boolean;
  timeoutMs: number | undefined;
  json: boolean;
  auth: AuthFlags;
}

export function parseCallArgs(args: string[], action: CallAction = 'call'): CallArgs {
  const dash = args.indexOf('--');
  const own = dash === -1 ? args : args.slice(0, dash);
  const command = dash === -1 ? undefined : args.slice(dash + 1);
  const { values, positionals } = parseOptions(
    own,
    {
      config: { type: 'string' },
      input: { type: 'string', multiple: true },
      arg: { type: 'string', multiple: true },
      env: { type: 'string', short: 'e', multiple: true },
      trace: { type: 'boolean', default: false },
      timeout: { type: 'string' },
      json: { type: 'boolean', default: false },
      ...AUTH_FLAGS,
    },
    USAGE,
  );
  if (command !== undefined && command.length === 0) throw new CliError(`-- needs a command\n${USAGE}`, EXIT.usage);
  const [server, ...rest] = command === undefined ? positionals : [undefined, ...positionals];
  const [method, paramsText, ...extra] = rest;
  if ((command === undefined && server === undefined) || extra.length > 0) throw new CliError(USAGE, EXIT.usage);
  if (action !== 'call' && method !== undefined) throw new CliError(`${action} takes a server and no method\n${USAGE}`, EXIT.usage);
  const envPairs = values.env as unknown as string[] | undefined;
  if (envPairs !== undefined && command === undefined) throw new CliError(`-e is for a server started with -- <command>\n${USAGE}`, EXIT.usage);
  const toolArgs = parseToolArgs(values.arg as unknown as string[] | undefined, method, paramsText);
  return {
    server,
    command,
    env: keyValues(envPairs, '-e', USAGE, /^[A-Za-z_][A-Za-z0-9_]*$/),
    method,
    params: paramsText === undefined ? undefined : parseParams(paramsText),
    toolArgs,
    config: values.config as string | undefined,
    inputs: keyValues(values.input as unknown as string[] | undefined, '--input', USAGE),
    trace: values.trace === true,
    timeoutMs: positiveInteger(values.timeout as string | undefined, '--timeout', USAGE),
    json: values.json === true,
    auth: authFlags(values, USAGE),
  };
}

/** `--arg key=value`: each value as JSON when it parses (numbers, booleans, objects), else as a string. */
function parseToolArgs(list: string[] | undefined, method: string | undefined, paramsText: string | undefined): Record<string, unknown> | undefined {
  if (list === undefined) return undefined;
  if (method === undefined) throw new CliError(`--arg needs a tool name\n${USAGE}`, EXIT.usage);
  if (paramsText !== undefined) throw new CliError(`give a tool its arguments with --arg or as params-json, not both\n${USAGE}`, EXIT.usage);
  const out: Record<string, unknown> = {};
  for (const [key, text] of Object.entries(keyValues(list, '--arg', USAGE))) {
    let value: unknown = text;
    try {
      value = JSON.parse(text);
    } catch {
      // Not JSON: the text itself.
    }
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function parseParams(text: string): unknown {
  let params: unknown;
  try {
    params = JSON.parse(text);
  } catch {
    const at = jsonErrorPosition(text);
    throw new CliError(`params are not JSON${at ? ` (column ${at.column})` : ''}: ${text.slice(0, 80)}`, EXIT.usage);
  }
  // JSON-RPC allows arrays, but every MCP method takes an object: say so now, not after a server's timeout.
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    const kind = Array.isArray(params) ? 'an array' : params === null ? 'null' : `a ${typeof params}`;
    throw new CliError(`params must be a JSON object, got ${kind}\n${USAGE}`, EXIT.usage);
  }
  return params;
}

type Item = Record<string, unknown>;

/** Every item of a paged list method (tools/list, resources/list, prompts/list), following nextCursor. */
async function listAll(connection: Connection, method: string, key: string): Promise<Item[]> {
  const items: Item[] = [];
  let cursor: string | undefined;
  do {
    const page = (await connection.request(method, cursor === undefined ? {} : { cursor })) as Record<string, unknown>;
    const list = page[key];
    if (Array.isArray(list)) items.push(...(list as Item[]));
    cursor = typeof page.nextCursor === 'string' ? page.nextCursor : undefined;
  } while (cursor !== undefined);
  return items;
}

/** Items as aligned lines: a key column and the first line of a description, made safe for a terminal. */
function columns(items: Item[], key: string, text: (item: Item) => unknown): string {
  const names = items.map((item) => printable(String(item[key])));
  const width = Math.max(0, ...names.map((n) => n.length));
  const lines = items.map((item, i) => `${names[i]!.padEnd(width)}  ${printable(String(text(item) ?? '').split('\n')[0]!)}`.trimEnd());
  return `${lines.join('\n')}${lines.length > 0 ? '\n' : ''}`;
}

const LISTS = {
  tools: ['tools/list', 'tools', 'name', (t: Item) => t.description],
  resources: ['resources/list', 'resources', 'uri', (r: Item) => r.name ?? r.description],
  prompts: ['prompts/list', 'prompts', 'name', (p: Item) => p.description],
} as const;

/**
 * A tool's arguments checked against its input schema, before anything is sent: a required argument missing,
 * or one the schema does not name, is a usage error naming it.
 */
function checkToolArgs(tool: Item | undefined, name: string, args: Record<string, unknown>, tools: Item[]): void {
  if (tool === undefined) throw new CliError(`no tool "${name}"; the server has: ${listNames(tools.map((t) => String(t.name)))}`, EXIT.usage);
  const schema = tool.inputSchema as { properties?: Record<string, unknown>; required?: unknown } | undefined;
  const required = Array.isArray(schema?.required) ? (schema.required as string[]) : [];
  const missing = required.filter((key) => !Object.hasOwn(args, key));
  if (missing.length > 0) throw new CliError(`tool "${name}" needs ${missing.map((k) => `--arg ${k}=...`).join(', ')}`, EXIT.usage);
  const known = schema?.properties;
  const unknown = known === undefined ? [] : Object.keys(args).filter((key) => !Object.hasOwn(known, key));
  if (unknown.length > 0)
    throw new CliError(
      `tool "${name}" takes no argument ${unknown.map((k) => `"${k}"`).join(', ')}; it takes: ${Object.keys(known!).join(', ') || 'none'}`,
      EXIT.usage,
    );
}

/** What the command does once connected; resolves with the exit code. */
async function act(c: Connection, opts: CallArgs, action: CallAction): Promise<number> {
  if (action !== 'call' || opts.method === undefined) {
    const [method, key, column, text] = LISTS[action === 'call' ? 'tools' : action];
    await writeStdout(columns(await listAll(c, method, key), column, text));
    return EXIT.ok;
  }
  if (opts.toolArgs !== undefined) {
    const tools = await listAll(c, 'tools/list', 'tools');
    checkToolArgs(
      tools.find((t) => t.name === opts.method),
      opts.method,
      opts.toolArgs,
      tools,
    );
    const result = (await c.request('tools/call', { name: opts.method, arguments: opts.toolArgs })) as Item;
    await writeStdout(`${printableJson(result, 2)}\n`);
    return result.isError === true ? EXIT.toolError : EXIT.ok;
  }
  try {
    await writeStdout(`${printableJson(await c.request(opts.method, opts.params), 2)}\n`);
    return EXIT.ok;
  } catch (err) {
    // `call demo echo` for a tool named echo: say how to call it.
    if (err instanceof RpcError && err.code === -32601 && !opts.method.includes('/')) {
      const tools = await listAll(c, 'tools/list', 'tools').catch(() => []);
      if (tools.some((t) => t.name === opts.method)) {
        throw new CliError(`${opts.method} is a tool: try mcp-frame call ${opts.server ?? '-- ...'} ${opts.method} --arg key=value`, EXIT.rpcError);
      }
    }
    throw err;
  }
}

/**
 * The entry of the server asked for: `-- <command>` as given, or from --config or the config a host would
 * find (`./.mcp.json`, then `./.vscode/mcp.json`, said on stderr). Only that entry is read: a variable another
 * entry needs does not stop this one.
 */
export async function serverEntry(opts: Pick<CallArgs, 'command' | 'env' | 'server' | 'config' | 'inputs'>, who = 'call'): Promise<ServerConfig> {
  if (opts.command !== undefined) {
    const [command, ...args] = opts.command;
    return { command: command!, args, env: opts.env };
  }
  const name = opts.server!;
  const path = opts.config ?? (await findConfig());
  if (path === undefined) throw new CliError('no config: neither ./.mcp.json nor ./.vscode/mcp.json exists; name one with --config', EXIT.config);
  if (opts.config === undefined) process.stderr.write(`mcp-frame ${who}: using ${path}\n`);
  try {
    const text = await readConfigText(path);
    const entry = serverNamed(parseConfig(text, path, { server: name, inputs: opts.inputs }), name);
    if (entry === undefined) throw new CliError(`no server "${name}" in ${path}; it has: ${listNames(configServerNames(text, path))}`, EXIT.config);
    return entry;
  } catch (err) {
    throw err instanceof ConfigError ? new CliError(err.message, EXIT.config) : err;
  }
}

/** Listeners that print what a host shows: stray output always, and with --trace frames, stderr, reconnections. */
function listen(c: Connection, name: string, trace: boolean): void {
  c.on('invalid', (err: FrameError) =>
    process.stderr.write(`mcp-frame call: skipped output from the server that is not a message: ${err.code}: ${err.message}: ${err.preview}\n`),
  );
  if (!trace) return;
  c.on('frame', (t: FrameTrace) => process.stderr.write(`${t.direction === 'send' ? '→' : '←'} ${t.bytes} B ${t.preview}\n`));
  c.on('stderr', (line: string) => process.stderr.write(`[${name} stderr] ${safeLine(line)}\n`));
  c.on('reconnecting', (r: { attempt: number; waitMs: number; reason: string }) =>
    process.stderr.write(`reconnecting to ${name} (attempt ${r.attempt}, in ${r.waitMs} ms): ${safeLine(r.reason)}\n`),
  );
  c.on('reconnected', (r: { attempt: number }) => process.stderr.write(`reconnected to ${name} after ${r.attempt} attempts\n`));
}

/** A failure as a CliError with its exit code; a timeout exits at once (the server is closed on the way out). */
function failure(err: unknown, opts: CallArgs, name: string): unknown {
  if (err instanceof RpcError)
    return new CliError(`server "${name}" answered ${opts.method ?? 'tools/list'} with error ${err.code}: ${safeLine(err.message)}`, EXIT.rpcError);
  if (err instanceof ConnectionError && err.code === 'TIMEOUT') return new CliError(err.message, EXIT.timeout, { exitNow: true });
  if (err instanceof ConnectionError && err.code.startsWith('AUTH_')) return new CliError(`${err.code}: ${err.message}`, EXIT.auth);
  if (err instanceof ConnectionError) return new CliError(err.message, EXIT.connection);
  return err;
}

/** `NAME VERSION (protocol P, era E, pid N)`: the server's info from initialize, or from discover's `_meta` on a modern server. */
function describeServer(c: Connection, name: string): string {
  const init = c.initializeResult ?? {};
  const meta = isObject(init._meta) ? init._meta : {};
  const info = (
    isObject(init.serverInfo)
      ? init.serverInfo
      : isObject(meta['io.modelcontextprotocol/serverInfo'])
        ? meta['io.modelcontextprotocol/serverInfo']
        : {}
  ) as {
    name?: string;
    version?: string;
  };
  const pid = c.pid === undefined ? '' : `, pid ${c.pid}`;
  return safeLine(`${info.name ?? name} ${info.version ?? ''} (protocol ${String(c.protocolVersion)}, ${c.era} era${pid})`);
}

/** `mcp-frame call`, `tools`, `resources`, `prompts`: connects, acts, and resolves with the exit code. */
export async function callCommand(args: string[], action: CallAction = 'call'): Promise<number> {
  const opts = parseCallArgs(args, action);
  const entry = await serverEntry(opts);
  const name = opts.server ?? basename(opts.command![0]!);
  let connection: Connection | undefined;
  // Interrupted, the servers are closed first (stdin, SIGTERM, SIGKILL), so that none is left running.
  const onSignal = (signal: NodeJS.Signals): void => {
    void (connection?.close() ?? Promise.resolve()).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const timeouts = opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs, requestTimeoutMs: opts.timeoutMs };
    const auth = cliAuth(entry, name, opts.auth, action, true);
    const c = await connect(entry, {
      name,
      ...(auth === undefined ? {} : { auth }),
      onSpawn: (spawned) => {
        connection = spawned;
        listen(spawned, name, opts.trace);
      },
      ...timeouts,
    });
    connection = c;
    process.stderr.write(`connected to ${describeServer(c, name)}\n`);
    return await act(c, opts, action);
  } catch (err) {
    const mapped = failure(err, opts, name);
    // The server did not answer in time, and may not leave in time either: close it on the way out, not
    // before it (stdin now; its process group gets SIGTERM when this process exits).
    if (mapped instanceof CliError && mapped.exitNow) {
      void connection?.close();
      connection = undefined;
    }
    throw mapped;
  } finally {
    await connection?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
