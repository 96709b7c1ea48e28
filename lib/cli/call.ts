import { clearProgressLine, withProgressView } from './progress.js';
import { isObject } from '../jsonrpc.js';
import { basename } from 'node:path';
import { listNames } from '../client/config.js';
import { type Connection, type FrameTrace, PROBE_TIMEOUT_MS, RpcError } from '../client/connection.js';
import { connect } from '../client/connect.js';
import { ConnectionError } from '../client/errors.js';
import { killServerGroups } from '../client/stdio.js';
import { type FrameError, frameProblem, printable, printableJson, safeLine } from '../errors.js';
import { jsonErrorPosition } from '../json-position.js';
import { listPages } from '../protocol/paging.js';
import { MODERN_PROTOCOL_VERSIONS } from '../protocol/modern.js';
import { LEGACY_PROTOCOL_VERSIONS } from '../protocol/versions.js';
import { AUTH_FLAGS, type AuthFlags, authFlags, cliAuth } from './auth.js';
import { headersOf, isServerUrl, serverEntry } from './entry.js';
import { CliError, envValues, EXIT, keyValues, nearest, parseOptions, positiveInteger, readInput, writeStdout } from './io.js';
import { CODES } from '../protocol/codes.js';

export const USAGE = `usage: mcp-frame call <server> [method [params-json | @file | -]] [options]
       mcp-frame call <server> <tool> [--arg key=value | --arg key=@file]... [options]
       mcp-frame call [method [params] | <tool> --arg key=value...] [options] -- <command> [args...]
       mcp-frame call [--url] <url> [--header 'Name: value'] [--header-env Name=VAR] [--socket-path p] [method [params] | <tool> ...]
       mcp-frame tools | resources | prompts <server> [options]   (or [--url] <url>, or [options] -- <command> [args...])
       mcp-frame resources <server> <uri>    read a resource;   mcp-frame prompts <server> <name> [--arg k=v]...   get a prompt
options: --config path  --input id=value  -e KEY=VALUE (with --)  --trace  --timeout ms  --json
  --protocol <revision>  speak this revision (2025-11-25, 2026-07-28...) without finding the server's era
sign-in (a remote server that asks for it): --no-browser  --callback-port n  --auth-timeout ms
  --authorize-param k=v  --client-id id (secret: $MCP_FRAME_CLIENT_SECRET)  --no-resource  --device-code`;

/** What the command does once connected. */
type CallAction = 'call' | 'tools' | 'resources' | 'prompts';

interface CallArgs {
  /** The server's name in the config; undefined for an ad hoc server (`-- <command>`). */
  server: string | undefined;
  /** `-- <command> [args...]`: a server started without a config. */
  command: string[] | undefined;
  /** `-e KEY=VALUE` for an ad hoc server. */
  env: Record<string, string>;
  method: string | undefined;
  params: unknown;
  /** `@file` or `-`: the params are read from there (after the arguments are checked). */
  paramsFrom?: string;
  /** `--arg key=value`: the method is a tool, called with these arguments, as given (typed by the tool's schema later). */
  toolArgs: Record<string, string> | undefined;
  /** `--url`: a remote server named by its URL, with `--header` and `--header-env` headers. */
  url?: string;
  /** `--socket-path`: the local socket the --url server is reached through (serve --http-socket). */
  socketPath?: string;
  headers?: Record<string, string>;
  /** The config named with --config; undefined: found as hosts find theirs. */
  config: string | undefined;
  /** Values for `${input:id}` in a VS Code config. */
  inputs: Record<string, string>;
  trace: boolean;
  timeoutMs: number | undefined;
  /** `--protocol`: the revision to speak, the era not found (undefined: found, `auto`). */
  protocolVersion: string | undefined;
  json: boolean;
  auth: AuthFlags;
}

/** `--protocol`: a revision of either era that this client speaks, or `auto`. */
function protocolFlag(text: string | undefined): string | undefined {
  if (text === undefined || text === 'auto') return undefined;
  const known = [...MODERN_PROTOCOL_VERSIONS, ...LEGACY_PROTOCOL_VERSIONS];
  if (!known.includes(text))
    throw new CliError(`--protocol takes auto or a revision (${known.join(', ')}), got ${JSON.stringify(text.slice(0, 40))}\n${USAGE}`, EXIT.usage);
  return text;
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
      protocol: { type: 'string' },
      json: { type: 'boolean', default: false },
      url: { type: 'string' },
      'socket-path': { type: 'string' },
      header: { type: 'string', multiple: true },
      'header-env': { type: 'string', multiple: true },
      ...AUTH_FLAGS,
    },
    USAGE,
  );
  // `call https://host/mcp tools/list`: a URL where the server's name goes is --url.
  const urlInPlace = values.url === undefined && command === undefined && isServerUrl(positionals[0]);
  const url = urlInPlace ? positionals.shift() : values.url;
  if (url !== undefined && command !== undefined) throw new CliError(`--url and -- <command> name two servers; give one\n${USAGE}`, EXIT.usage);
  if (command !== undefined && command.length === 0) throw new CliError(`-- needs a command\n${USAGE}`, EXIT.usage);
  const [server, ...rest] = command === undefined && url === undefined ? positionals : [undefined, ...positionals];
  const [method, paramsText, ...extra] = rest;
  if (extra.length > 0) throw new CliError(`unexpected argument ${JSON.stringify(extra[0])}: params go in one JSON argument\n${USAGE}`, EXIT.usage);
  if (action === 'tools' && method !== undefined) throw new CliError(`tools takes a server and no method\n${USAGE}`, EXIT.usage);
  if ((action === 'resources' || action === 'prompts') && paramsText !== undefined)
    throw new CliError(`${action} takes a server and at most one ${action === 'resources' ? 'URI' : 'prompt name'}\n${USAGE}`, EXIT.usage);
  if (action === 'resources' && values.arg !== undefined)
    throw new CliError(`resources takes no --arg: a resource is named by its URI\n${USAGE}`, EXIT.usage);
  const envPairs = values.env;
  if (envPairs !== undefined && command === undefined) throw new CliError(`-e is for a server started with -- <command>\n${USAGE}`, EXIT.usage);
  // `call demo tools/list --url <url>`: the server named twice, its name taken for the method.
  if (values.url !== undefined && paramsText !== undefined && /^[\w.-]+\/[\w./-]*$/.test(paramsText))
    throw new CliError(
      `--url names the server, so ${JSON.stringify(method)} would be the method and ${JSON.stringify(paramsText)} its params: name the server once, by --url or by its name\n${USAGE}`,
      EXIT.usage,
    );
  const toolArgs = parseToolArgs(values.arg, method, paramsText);
  const fromFile = paramsText !== undefined && (paramsText === '-' || paramsText.startsWith('@'));
  const socketPath = values['socket-path'] as string | undefined;
  if (socketPath !== undefined && url === undefined) throw new CliError(`--socket-path is for a server named by --url\n${USAGE}`, EXIT.usage);
  const remote =
    url === undefined
      ? {}
      : { url, headers: headersOf(values.header, values['header-env'], USAGE), ...(socketPath === undefined ? {} : { socketPath }) };
  return {
    server,
    command,
    env: envValues(envPairs, USAGE),
    method,
    params: paramsText === undefined || fromFile ? undefined : parseParams(paramsText),
    ...(fromFile ? { paramsFrom: paramsText } : {}),
    toolArgs,
    ...remote,
    config: values.config as string | undefined,
    inputs: keyValues(values.input, '--input', USAGE),
    trace: values.trace === true,
    timeoutMs: positiveInteger(values.timeout as string | undefined, '--timeout', USAGE),
    protocolVersion: protocolFlag(values.protocol as string | undefined),
    json: values.json === true,
    auth: authFlags(values, USAGE),
  };
}

/** `--arg key=value` as given: each key once; values are typed later, by the tool's input schema. */
function parseToolArgs(list: string[] | undefined, method: string | undefined, paramsText: string | undefined): Record<string, string> | undefined {
  if (list === undefined) return undefined;
  if (method === undefined) throw new CliError(`--arg needs a tool name\n${USAGE}`, EXIT.usage);
  if (paramsText !== undefined) throw new CliError(`give a tool its arguments with --arg or as params-json, not both\n${USAGE}`, EXIT.usage);
  const seen = new Set<string>();
  for (const pair of list) {
    const key = pair.slice(0, Math.max(0, pair.indexOf('=')));
    if (seen.has(key)) throw new CliError(`--arg ${key} is given twice; give each argument once\n${USAGE}`, EXIT.usage);
    seen.add(key);
  }
  return keyValues(list, '--arg', USAGE);
}

/**
 * A tool argument's text as the value its schema asks for: a string as typed (`--arg id=123` is "123" for a
 * string), a number, an integer, a boolean, an object or an array parsed from JSON; a union takes the first type
 * the text can be. Without a type, JSON when it parses, else the text. A text the schema cannot take is a usage
 * error naming the argument and the type.
 */
function typedArg(key: string, text: string, schema: unknown): unknown {
  const declared = isObject(schema) ? schema.type : undefined;
  const types = Array.isArray(declared) ? declared.map(String) : typeof declared === 'string' ? [declared] : [];
  let json: unknown;
  let parses = true;
  try {
    json = JSON.parse(text);
  } catch {
    parses = false;
  }
  if (types.length === 0) return parses ? json : text;
  for (const type of types) {
    if (type === 'string') return text;
    if (!parses) continue;
    if (type === 'integer' && Number.isInteger(json)) return json;
    if (type === 'number' && typeof json === 'number') return json;
    if (type === 'boolean' && typeof json === 'boolean') return json;
    if (type === 'null' && json === null) return json;
    if (type === 'array' && Array.isArray(json)) return json;
    if (type === 'object' && isObject(json)) return json;
  }
  throw new CliError(
    `--arg ${key}: expected ${types.join(' or ')}, got ${JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)}`,
    EXIT.usage,
  );
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

/**
 * Every item of a paged list method (tools/list, resources/list, prompts/list), following nextCursor; a cursor
 * given twice or too many pages end the listing, with a line on stderr.
 */
async function listAll(connection: Connection, method: string, key: string): Promise<Item[]> {
  const { items, stopped } = await listPages((cursor) => connection.request(method, cursor === undefined ? {} : { cursor }), key);
  if (stopped !== undefined) process.stderr.write(`mcp-frame: ${method} stopped after ${items.length} items: ${safeLine(stopped)}\n`);
  return items.filter(isObject) as Item[];
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

/** A tool name the server does not have (a typo, most often): the nearest name, and the tools there are. */
function noTool(name: string, tools: Item[], what = 'tool'): CliError {
  const names = tools.map((t) => String(t.name));
  const near = nearest(name, names);
  const hint = near === undefined ? '' : ` (did you mean ${JSON.stringify(near)}?)`;
  return new CliError(`no ${what} ${JSON.stringify(name)}${hint}; the server has: ${listNames(names)}`, EXIT.usage);
}

/**
 * A tool's arguments checked against its input schema, before anything is sent: a required argument missing,
 * or one the schema does not name, is a usage error naming it.
 */
function checkToolArgs(tool: Item | undefined, name: string, args: Record<string, unknown>, tools: Item[]): void {
  if (tool === undefined) throw noTool(name, tools);
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

/** A tool's result printed; `isError: true` is exit 1, whichever form called the tool. */
async function printResult(result: unknown): Promise<number> {
  await writeStdout(`${printableJson(result, 2)}\n`);
  return isObject(result) && result.isError === true ? EXIT.toolError : EXIT.ok;
}

/** Calls tool `name` with `--arg` texts typed by its input schema, after checking them against it. */
async function callTool(c: Connection, name: string, texts: Record<string, string>): Promise<number> {
  const tools = await listAll(c, 'tools/list', 'tools');
  const tool = tools.find((t) => t.name === name);
  const properties = (tool?.inputSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
  const args: Record<string, unknown> = {};
  for (const [key, text] of Object.entries(texts)) {
    Object.defineProperty(args, key, { value: typedArg(key, text, properties[key]), enumerable: true, writable: true, configurable: true });
  }
  checkToolArgs(tool, name, args, tools);
  return printResult(await callShowingProgress(c, { name, arguments: args }));
}

/** A tools/call, its progress shown on stderr while it runs when stderr is a terminal. */
async function callShowingProgress(c: Connection, params: unknown): Promise<unknown> {
  if (!isObject(params)) return c.request('tools/call', params);
  const view = withProgressView(c, params);
  try {
    return await c.request('tools/call', view.params);
  } finally {
    view.done();
  }
}

/** The resources and, where the server has them (a server without answers -32601), the resource templates. */
async function listResources(c: Connection, json: boolean): Promise<string> {
  const resources = await listAll(c, 'resources/list', 'resources');
  const templates = await listAll(c, 'resources/templates/list', 'resourceTemplates').catch((err: unknown) => {
    if (err instanceof RpcError && err.code === CODES.methodNotFound) return [];
    throw err;
  });
  if (json) return `${printableJson([...resources, ...templates])}\n`;
  const [, , column, text] = LISTS.resources;
  return columns(resources, column, text) + columns(templates, 'uriTemplate', (t) => `(template) ${String(t.name ?? t.description ?? '')}`);
}

/** `prompts <server> <name> [--arg k=v]...`: prompts/get, each argument a string as prompts take them. */
async function getPrompt(c: Connection, name: string, args: Record<string, string>): Promise<number> {
  const prompts = await listAll(c, 'prompts/list', 'prompts');
  const prompt = prompts.find((p) => p.name === name);
  if (prompt === undefined) throw new CliError(`no prompt "${name}"; the server has: ${listNames(prompts.map((p) => String(p.name)))}`, EXIT.usage);
  const declared = (Array.isArray(prompt.arguments) ? prompt.arguments : []).filter(isObject) as Item[];
  const missing = declared.filter((a) => a.required === true && !Object.hasOwn(args, String(a.name))).map((a) => String(a.name));
  if (missing.length > 0) throw new CliError(`prompt "${name}" needs ${missing.map((k) => `--arg ${k}=...`).join(', ')}`, EXIT.usage);
  const unknown = Object.keys(args).filter((key) => !declared.some((a) => a.name === key));
  if (unknown.length > 0)
    throw new CliError(
      `prompt "${name}" takes no argument ${unknown.map((k) => `"${k}"`).join(', ')}; it takes: ${declared.map((a) => String(a.name)).join(', ') || 'none'}`,
      EXIT.usage,
    );
  await writeStdout(`${printableJson(await c.request('prompts/get', { name, arguments: args }), 2)}\n`);
  return EXIT.ok;
}

/** What the command does once connected; resolves with the exit code. */
async function act(c: Connection, opts: CallArgs, action: CallAction): Promise<number> {
  if (action === 'resources' && opts.method !== undefined) {
    await writeStdout(`${printableJson(await c.request('resources/read', { uri: opts.method }), 2)}\n`);
    return EXIT.ok;
  }
  if (action === 'prompts' && opts.method !== undefined) return getPrompt(c, opts.method, opts.toolArgs ?? {});
  if (action === 'resources') {
    await writeStdout(await listResources(c, opts.json));
    return EXIT.ok;
  }
  if (action !== 'call' || opts.method === undefined) {
    const [method, key, column, text] = LISTS[action === 'call' ? 'tools' : action];
    const items = await listAll(c, method, key);
    await writeStdout(opts.json ? `${printableJson(items)}\n` : columns(items, column, text));
    return EXIT.ok;
  }
  if (opts.toolArgs !== undefined) return callTool(c, opts.method, opts.toolArgs);
  try {
    const result = opts.method === 'tools/call' ? await callShowingProgress(c, opts.params) : await c.request(opts.method, opts.params);
    if (opts.method === 'tools/call') return printResult(result);
    await writeStdout(`${printableJson(result, 2)}\n`);
    return EXIT.ok;
  } catch (err) {
    // `call demo echo` for a tool named echo: call it when it needs no arguments, else say how to give them.
    if (err instanceof RpcError && err.code === CODES.methodNotFound && !opts.method.includes('/') && opts.params === undefined) {
      const tools = await listAll(c, 'tools/list', 'tools').catch(() => []);
      const tool = tools.find((t) => t.name === opts.method);
      if (tool !== undefined) {
        const required = (tool.inputSchema as { required?: unknown } | undefined)?.required;
        if (!Array.isArray(required) || required.length === 0) return callTool(c, opts.method, {});
        throw new CliError(
          `${opts.method} is a tool: try mcp-frame call ${opts.server ?? '-- ...'} ${opts.method} ${required.map((k) => `--arg ${String(k)}=...`).join(' ')}`,
          EXIT.usage,
        );
      }
      // Neither a method the server knows nor one of its tools: a typo, most often.
      if (tools.length > 0) throw noTool(opts.method, tools, 'method or tool');
    }
    throw err;
  }
}

/** `--arg key=@file`: the file's text is the value (a text that starts with `@` is given as `@@...`). */
async function readArgFiles(texts: Record<string, string>): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, text] of Object.entries(texts)) {
    const value = text.startsWith('@@') ? text.slice(1) : text.startsWith('@') ? await readInput(text.slice(1), `--arg ${key}`, EXIT.usage) : text;
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** The params of `@file` or `-` (stdin), read and checked as params-json is. */
async function readParams(from: string): Promise<unknown> {
  // A file named on the command line that cannot be read is a usage error, as a bad argument is.
  const text = await readInput(from === '-' ? '-' : from.slice(1), 'params', EXIT.usage);
  if (text.trim() === '') {
    throw new CliError(
      `the params ${from === '-' ? 'on stdin' : `in ${from.slice(1)}`} are empty: give a JSON object (or no params at all)`,
      EXIT.usage,
    );
  }
  return parseParams(text.trim());
}

/** Listeners that print what a host shows: stray output always, and with --trace frames, stderr, reconnections. */
function listen(c: Connection, name: string, trace: boolean, who: string): void {
  c.on('invalid', (err: FrameError) =>
    process.stderr.write(`mcp-frame ${who}: skipped output from the server that is not a message: ${frameProblem(err)}\n`),
  );
  if (!trace) return;
  // Every line starts with the command that wrote it, as the others do.
  const say = (text: string): void => void process.stderr.write(`mcp-frame ${who}: ${text}\n`);
  c.on('frame', (t: FrameTrace) => say(`${t.direction === 'send' ? '→' : '←'} ${t.bytes} B ${t.preview}`));
  c.on('stderr', (line: string) => say(`[${name} stderr] ${safeLine(line)}`));
  c.on('reconnecting', (r: { attempt: number; waitMs: number; reason: string }) =>
    say(`reconnecting to ${name} (attempt ${r.attempt}, in ${r.waitMs} ms): ${safeLine(r.reason)}`),
  );
  c.on('reconnected', (r: { attempt: number }) => say(`reconnected to ${name} after ${r.attempt} attempts`));
}

/** The request a command sends first: the list it was asked for, or its method. */
function requestOf(opts: CallArgs, action: CallAction): string {
  if (action === 'resources' && opts.method !== undefined) return 'resources/read';
  if (action === 'prompts' && opts.method !== undefined) return 'prompts/get';
  if (action !== 'call' || opts.method === undefined) return LISTS[action === 'call' ? 'tools' : action][0];
  return opts.toolArgs !== undefined ? 'tools/call' : opts.method;
}

/** A failure as a CliError with its exit code; a timeout exits at once (the server is closed on the way out). */
function failure(err: unknown, opts: CallArgs, name: string, action: CallAction): unknown {
  if (err instanceof RpcError) {
    const request = requestOf(opts, action);
    const what = `server "${name}" answered ${request} with error ${err.code}: ${safeLine(err.message)}`;
    // A list method the server does not have: it offers none of those.
    if (err.code === CODES.methodNotFound && request.endsWith('/list'))
      return new CliError(`server "${name}" offers no ${request.split('/')[0]} (${what})`, EXIT.rpcError);
    return new CliError(what, EXIT.rpcError);
  }
  if (err instanceof ConnectionError && err.code === 'TIMEOUT') return new CliError(err.message, EXIT.timeout, { exitNow: true });
  if (err instanceof ConnectionError && err.code.startsWith('AUTH_')) return new CliError(`${err.code}: ${err.message}`, EXIT.auth);
  if (err instanceof ConnectionError) return new CliError(err.message, EXIT.connection);
  return err;
}

/** `NAME VERSION (protocol P, era E, pid N)`: the server's info from initialize, or from discover's `_meta` on a modern server. */
function describeServer(c: Connection, name: string, fellBack: boolean): string {
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
  // connect() fell back to it: Streamable HTTP answered 400, 404 or 405.
  const sse = fellBack ? ', over the deprecated HTTP+SSE transport: Streamable HTTP was refused' : '';
  return safeLine(`${info.name ?? name} ${info.version ?? ''} (protocol ${String(c.protocolVersion)}, ${c.era} era${pid}${sse})`);
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** `mcp-frame call`, `tools`, `resources`, `prompts`: connects, acts, and resolves with the exit code. */
export async function callCommand(args: string[], action: CallAction = 'call'): Promise<number> {
  const opts = parseCallArgs(args, action);
  const entry = await serverEntry({ ...opts, usage: USAGE }, action);
  if (opts.paramsFrom !== undefined) opts.params = await readParams(opts.paramsFrom);
  if (opts.toolArgs !== undefined) opts.toolArgs = await readArgFiles(opts.toolArgs);
  const name = opts.server ?? (opts.url !== undefined ? new URL(opts.url).host : basename(opts.command![0]!));
  let connection: Connection | undefined;
  let interrupted = false;
  // Interrupted (Ctrl-C, kill, the terminal closed): said at once, what is in flight cancelled, the server closed
  // (stdin, SIGTERM, SIGKILL) so that none is left running; a second signal kills its process group and exits.
  const onSignal = (signal: NodeJS.Signals): void => {
    const code = signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143;
    if (interrupted) {
      killServerGroups('SIGKILL');
      process.exit(code);
    }
    interrupted = true;
    // A closed terminal fails the write; the server is closed all the same.
    process.stderr.on('error', () => undefined);
    // A progress bar on the line is cleared first: the message starts a line of its own.
    clearProgressLine(process.stderr);
    process.stderr.write(`mcp-frame ${action}: ${signal}: closing the server (again to stop at once)\n`);
    connection?.cancelAll(`the user interrupted ${action} (${signal})`);
    void (connection?.close() ?? Promise.resolve()).finally(() => process.exit(code));
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  try {
    const timeouts = opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs, requestTimeoutMs: opts.timeoutMs };
    const auth = cliAuth(entry, name, opts.auth, action, true);
    const started = Date.now();
    const c = await connect(entry, {
      name,
      ...(auth === undefined ? {} : { auth }),
      ...(opts.protocolVersion === undefined ? {} : { protocolVersion: opts.protocolVersion }),
      onSpawn: (spawned) => {
        connection = spawned;
        listen(spawned, name, opts.trace, action);
      },
      ...timeouts,
    });
    connection = c;
    const fellBack = c.transport === 'sse' && !(entry as { type?: string }).type?.startsWith('sse');
    if (!opts.json) process.stderr.write(`mcp-frame ${action}: connected to ${describeServer(c, name, fellBack)}\n`);
    // A stdio server that let the era probe wait out its time (it ignores methods it does not know) costs every
    // run that wait: say how to skip it.
    const took = Date.now() - started;
    if (!opts.json && opts.protocolVersion === undefined && c.era === 'legacy' && c.pid !== undefined && took >= PROBE_TIMEOUT_MS)
      process.stderr.write(
        `mcp-frame ${action}: finding the server's era took ${took} ms (a server that ignores server/discover is waited for ${PROBE_TIMEOUT_MS} ms); --protocol ${String(c.protocolVersion)} skips that\n`,
      );
    return await act(c, opts, action);
  } catch (err) {
    // What the interruption cancelled: the signal handler says why and exits once the server is closed.
    if (interrupted) return new Promise<number>(() => undefined);
    const mapped = failure(err, opts, name, action);
    // The server did not answer in time, and may not leave in time either: close it on the way out, not
    // before it (stdin now; its process group gets SIGTERM when this process exits).
    if (mapped instanceof CliError && mapped.exitNow) {
      void connection?.close();
      connection = undefined;
    }
    throw mapped;
  } finally {
    await connection?.close();
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
}
