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
  let raw: Json;
  try {
    raw = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    const at = jsonErrorPosition(text.replace(/^\uFEFF/, ''));
    throw new ConfigError(path, at ? `not valid JSON at line ${at.line}, column ${at.column}` : 'not valid JSON');
  }
  const fail = (jsonPath: string, message: string, server?: string): never => {
    throw new ConfigError(path, message, server === undefined ? { jsonPath } : { jsonPath, server });
  };
  if (!isObject(raw)) fail('(top level)', `expected an object with "mcpServers", got ${kind(raw)}`);
  const servers = (raw as Record<string, Json>).mcpServers;
  if (!isObject(servers)) fail('mcpServers', servers === undefined ? 'missing' : `expected an object, got ${kind(servers)}`);

  const out: Record<string, ServerConfig> = {};
  for (const [name, entry] of Object.entries(servers as Record<string, Json>)) {
    const at = keyPath('mcpServers', name);
    const expand = (value: string, fieldPath: string): string =>
      value.replace(VARIABLE, (_m, variable: string, fallback: string | undefined) => {
        const v = env[variable];
        if (v !== undefined && v !== '') return v;
        if (fallback !== undefined) return fallback;
        if (v !== undefined) return v;
        throw new ConfigError(path, `variable ${variable} is not set (server "${name}")`, { jsonPath: fieldPath, server: name, variable });
      });
    const str = (v: Json, p: string): string => (typeof v === 'string' ? expand(v, p) : fail(p, `expected a string, got ${kind(v)}`, name));
    const strings = (v: Json, p: string): string[] =>
      Array.isArray(v) ? v.map((x, i) => str(x, `${p}[${i}]`)) : fail(p, `expected an array of strings, got ${kind(v)}`, name);
    const stringMap = (v: Json, p: string): Record<string, string> => {
      if (!isObject(v)) return fail(p, `expected an object of strings, got ${kind(v)}`, name);
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, str(x, keyPath(p, k))]));
    };

    if (!isObject(entry)) fail(at, `expected an object, got ${kind(entry)}`, name);
    const e = entry as Record<string, Json>;
    const type = e.type;
    if (type === undefined || type === 'stdio') {
      if (e.command === undefined) fail(`${at}.command`, 'missing (a stdio server needs a command)', name);
      const command = str(e.command, `${at}.command`);
      if (command.trim() === '') fail(`${at}.command`, 'is empty', name);
      const server: StdioServerConfig = { ...(type === undefined ? {} : { type }), command };
      if (e.args !== undefined) server.args = strings(e.args, `${at}.args`);
      if (e.env !== undefined) server.env = stringMap(e.env, `${at}.env`);
      if (e.cwd !== undefined) server.cwd = resolve(dirname(resolve(path)), str(e.cwd, `${at}.cwd`));
      out[name] = server;
    } else if (type === 'http' || type === 'sse') {
      if (e.url === undefined) fail(`${at}.url`, `missing (an ${type} server needs a url)`, name);
      const server: RemoteServerConfig = { type, url: str(e.url, `${at}.url`) };
      if (e.headers !== undefined) server.headers = stringMap(e.headers, `${at}.headers`);
      out[name] = server;
    } else {
      fail(`${at}.type`, `expected "stdio", "http" or "sse", got ${JSON.stringify(type)}`, name);
    }
  }
  return { mcpServers: out };
}
