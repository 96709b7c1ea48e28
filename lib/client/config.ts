import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { jsonErrorPosition } from '../json-position.js';

/** A server started as a child process, talking over its stdin and stdout. */
export interface StdioServerConfig {
  type?: 'stdio';
  command: string;
  args?: string[];
  env?: Record<string, string>;
  /** Working directory; a relative one is taken from the config file's folder. */
  cwd?: string;
}

/** A server reached over HTTP (Streamable HTTP or the older SSE transport). Kept, not connected to yet. */
export interface RemoteServerConfig {
  type: 'http' | 'sse';
  url: string;
  headers?: Record<string, string>;
}

export type ServerConfig = StdioServerConfig | RemoteServerConfig;

export interface McpConfig {
  mcpServers: Record<string, ServerConfig>;
}

export interface LoadConfigOptions {
  /**
   * Where `${VAR}` and `${VAR:-default}` take their values from.
   * @defaultValue process.env
   */
  env?: NodeJS.ProcessEnv;
}

/** A config file that cannot be used: says which file, and where in it. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** The config file. */
  readonly file: string;
  /** JSON path of the offending field, as `mcpServers.fs.args[1]`, where there is one. */
  readonly jsonPath: string | undefined;
  /** The server entry concerned, where there is one. */
  readonly server: string | undefined;
  /** The unset variable, for an expansion error. */
  readonly variable: string | undefined;

  constructor(file: string, message: string, details: { jsonPath?: string; server?: string; variable?: string } = {}) {
    super(`${file}: ${details.jsonPath ? `${details.jsonPath}: ` : ''}${message}`);
    this.file = file;
    this.jsonPath = details.jsonPath;
    this.server = details.server;
    this.variable = details.variable;
  }
}

export function isStdioServer(server: ServerConfig): server is StdioServerConfig {
  return server.type === undefined || server.type === 'stdio';
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);
const kind = (v: Json): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`);
const keyPath = (base: string, key: string): string => (/^[A-Za-z_$][\w$]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`);

/**
 * Reads an `.mcp.json` file: `{ "mcpServers": { name: { command, args, env, cwd } | { type, url, headers } } }`.
 * Expands `${VAR}` and `${VAR:-default}` in command, args, env values, cwd, url and header values. Every
 * problem is a ConfigError naming the file and the JSON path. Nothing here runs anything.
 */
export async function loadConfig(path = '.mcp.json', options: LoadConfigOptions = {}): Promise<McpConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(path, code === 'ENOENT' ? 'no such file' : `cannot read: ${(err as Error).message}`);
  }
  return parseConfig(text, path, options);
}

/** As loadConfig, from the text of a config file; `path` names it in errors and anchors a relative cwd. */
export function parseConfig(text: string, path: string, { env = process.env }: LoadConfigOptions = {}): McpConfig {
  const servers = serversOf(parseJson(text, path), path);
  const out: Record<string, ServerConfig> = {};
  for (const [name, entry] of Object.entries(servers)) {
    // defineProperty, so that a server named `__proto__` is an ordinary name.
    Object.defineProperty(out, name, { value: new EntryReader(path, name, env).read(entry), enumerable: true, writable: true, configurable: true });
  }
  return { mcpServers: out };
}

function parseJson(text: string, path: string): Json {
  const body = text.replace(/^\uFEFF/, '');
  try {
    return JSON.parse(body);
  } catch {
    const at = jsonErrorPosition(body);
    throw new ConfigError(path, at ? `not valid JSON at line ${at.line}, column ${at.column}` : 'not valid JSON');
  }
}

function serversOf(raw: Json, path: string): Record<string, Json> {
  if (!isObject(raw)) throw new ConfigError(path, `expected an object with "mcpServers", got ${kind(raw)}`, { jsonPath: '(top level)' });
  const servers = raw.mcpServers;
  if (!isObject(servers)) {
    throw new ConfigError(path, servers === undefined ? 'missing' : `expected an object, got ${kind(servers)}`, { jsonPath: 'mcpServers' });
  }
  return servers;
}

/** Reads one server entry: checks each field's type and expands variables, naming the file, path and server. */
class EntryReader {
  readonly #at: string;

  constructor(
    readonly file: string,
    readonly name: string,
    readonly env: NodeJS.ProcessEnv,
  ) {
    this.#at = keyPath('mcpServers', name);
  }

  read(entry: Json): ServerConfig {
    if (!isObject(entry)) return this.#fail(this.#at, `expected an object, got ${kind(entry)}`);
    const type = entry.type;
    // An entry with a url and no command is remote: Streamable HTTP unless its type says otherwise.
    if (type === undefined && entry.command === undefined && entry.url !== undefined) return this.#remote(entry, 'http');
    if (type === undefined || type === 'stdio') return this.#stdio(entry, type);
    if (type === 'http' || type === 'sse') return this.#remote(entry, type);
    return this.#fail(`${this.#at}.type`, `expected "stdio", "http" or "sse", got ${JSON.stringify(type)}`);
  }

  #stdio(e: Record<string, Json>, type: 'stdio' | undefined): StdioServerConfig {
    const at = this.#at;
    if (e.command === undefined) this.#fail(`${at}.command`, 'missing (a stdio server needs a command)');
    const command = this.#string(e.command, `${at}.command`);
    if (command.trim() === '') this.#fail(`${at}.command`, 'is empty');
    const server: StdioServerConfig = { ...(type === undefined ? {} : { type }), command };
    if (e.args !== undefined) server.args = this.#strings(e.args, `${at}.args`);
    if (e.env !== undefined) server.env = this.#stringMap(e.env, `${at}.env`);
    if (e.cwd !== undefined) server.cwd = resolve(dirname(resolve(this.file)), this.#string(e.cwd, `${at}.cwd`));
    return server;
  }

  #remote(e: Record<string, Json>, type: 'http' | 'sse'): RemoteServerConfig {
    const at = this.#at;
    if (e.url === undefined) this.#fail(`${at}.url`, `missing (an ${type} server needs a url)`);
    const server: RemoteServerConfig = { type, url: this.#string(e.url, `${at}.url`) };
    if (e.headers !== undefined) server.headers = this.#stringMap(e.headers, `${at}.headers`);
    return server;
  }

  #fail(jsonPath: string, message: string): never {
    throw new ConfigError(this.file, message, { jsonPath, server: this.name });
  }

  #expand(value: string, jsonPath: string): string {
    return value.replace(VARIABLE, (_m, variable: string, fallback: string | undefined) => {
      // Own properties only: `${constructor}` is a variable like any other, and not set.
      const v = Object.hasOwn(this.env, variable) ? this.env[variable] : undefined;
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      if (v !== undefined) return v;
      throw new ConfigError(this.file, `variable ${variable} is not set (server "${this.name}")`, { jsonPath, server: this.name, variable });
    });
  }

  #string(v: Json, p: string): string {
    return typeof v === 'string' ? this.#expand(v, p) : this.#fail(p, `expected a string, got ${kind(v)}`);
  }

  #strings(v: Json, p: string): string[] {
    if (!Array.isArray(v)) return this.#fail(p, `expected an array of strings, got ${kind(v)}`);
    return v.map((x, i) => this.#string(x, `${p}[${i}]`));
  }

  #stringMap(v: Json, p: string): Record<string, string> {
    if (!isObject(v)) return this.#fail(p, `expected an object of strings, got ${kind(v)}`);
    const out: Record<string, string> = {};
    for (const [k, x] of Object.entries(v))
      Object.defineProperty(out, k, { value: this.#string(x, keyPath(p, k)), enumerable: true, writable: true, configurable: true });
    return out;
  }
}

/** The entry called `name`, or undefined: only the config's own names count (`constructor` is not one). */
export function serverNamed(config: McpConfig, name: string): ServerConfig | undefined {
  return Object.hasOwn(config.mcpServers, name) ? config.mcpServers[name] : undefined;
}

/** The config's server names for an error message, the first `max` of them and how many more. */
export function listNames(config: McpConfig, max = 20): string {
  const names = Object.keys(config.mcpServers);
  if (names.length === 0) return 'none';
  // A name with characters that are not plain is shown as a JSON string.
  const shown = names.slice(0, max).map((n) => (/^[\w.@-]{1,60}$/.test(n) ? n : JSON.stringify(n.slice(0, 60))));
  return names.length > max ? `${shown.join(', ')} and ${names.length - max} more` : shown.join(', ');
}
