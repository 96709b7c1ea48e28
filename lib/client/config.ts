import { CodexConfigProblem, codexConfigJson } from './codex.js';
import { isObject } from '../jsonrpc.js';
import { readFileSync } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
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
  /** How the command line signs in to it, when it asks (see AuthOptions). */
  auth?: RemoteAuthConfig;
  /**
   * Reach it through this local socket (a Unix socket, or a named pipe on Windows; `mcp-frame serve
   * --http-socket` offers one): the url then names the path and the Host (`http://localhost/mcp`).
   */
  socketPath?: string;
}

/** A remote entry's `auth`: a client registered in advance, the scope, a client ID metadata document, the callback port. */
export interface RemoteAuthConfig {
  clientId?: string;
  /** Only from the environment or an input (`${env:VAR}`, `${input:id}`), never written in the file. */
  clientSecret?: string;
  scope?: string;
  clientMetadataUrl?: string;
  /** The loopback callback's port. @defaultValue any free port */
  callbackPort?: number;
  /** More authorization request parameters (Google's `access_type: offline`, Auth0's `audience`). */
  params?: Record<string, string>;
  /** false: send no RFC 8707 `resource` parameter, for an authorization server that refuses it (Entra ID). */
  resource?: false;
  /**
   * Behind `mcp-frame serve --auth-issuer`: `exchange` reaches the server with each signed-in caller's own token,
   * exchanged (RFC 8693) at the issuer's token endpoint for one meant for this server (its URL as `resource`, and
   * `audience` and `scope` when given); never with the caller's own token, never with one identity for all.
   */
  mode?: 'exchange';
  /** With `mode: exchange`: the exchange's `audience` parameter (a logical name the authorization server knows). */
  audience?: string;
}

/** A server behind a local socket (a Unix domain socket, or a named pipe on Windows) carrying NDJSON, as `mcp-frame serve --socket` offers. */
export interface SocketServerConfig {
  type: 'socket';
  path: string;
}

export type ServerConfig = StdioServerConfig | RemoteServerConfig | SocketServerConfig;

export interface McpConfig {
  mcpServers: Record<string, ServerConfig>;
}

export interface LoadConfigOptions {
  /**
   * Where `${VAR}`, `${VAR:-default}` and `${env:VAR}` take their values from.
   * @defaultValue process.env
   */
  env?: NodeJS.ProcessEnv;
  /**
   * Read and expand only this server's entry: a problem in another entry (a variable it needs and this
   * process does not have) does not stop it. The result holds that entry alone.
   */
  server?: string;
  /** Values for VS Code's `${input:id}`, which cannot be prompted for here. */
  inputs?: Record<string, string>;
  /** The editors' `${userHome}`. @defaultValue os.homedir() */
  home?: string;
  /**
   * The folder Claude Code's `~/.claude.json` is read for: its local scope (`projects["<folder>"].mcpServers`)
   * over the folder's `.mcp.json` (project scope) over its top-level `mcpServers` (user scope).
   * @defaultValue process.cwd()
   */
  cwd?: string;
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

/**
 * `${VAR}`, `${VAR:-default}` (Claude), `${env:VAR}` (Cursor, VS Code), `${input:id}` (VS Code), and the
 * editors' predefined variables (VS Code's and Cursor's: `${userHome}`, `${workspaceFolder}`, `${/}`, ...);
 * `${config:...}` and `${command:...}` are matched to be refused by name, never passed on as they are.
 */
const VARIABLE = /\$\{(?:(env|input|config|command):)?([A-Za-z_][A-Za-z0-9_.-]*)(?::-([^}]*))?\}|\$\{\/\}/g;

/** Where hosts put a remote server's URL: `url` (Claude, Cursor, VS Code), `serverUrl` (Windsurf), `httpUrl` (Gemini CLI). */
const URL_KEYS = ['url', 'serverUrl', 'httpUrl'] as const;

/** Other hosts' `type` for Streamable HTTP. */
const STREAMABLE_ALIASES = new Set(['streamable-http', 'streamableHttp', 'streamable_http']);

/** The editors' variables of the editor's own state (an open file, a selection): nothing here can stand for them. */
const EDITOR_STATE = new Set([
  'file',
  'fileBasename',
  'fileBasenameNoExtension',
  'fileDirname',
  'fileDirnameBasename',
  'fileExtname',
  'fileWorkspaceFolder',
  'fileWorkspaceFolderBasename',
  'relativeFile',
  'relativeFileDirname',
  'lineNumber',
  'columnNumber',
  'selectedText',
  'execPath',
  'defaultBuildTask',
]);

type Json = unknown;
const kind = (v: Json): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`);
const keyPath = (base: string, key: string): string => (/^[A-Za-z_$][\w$]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`);

/**
 * Reads a config file in any of the hosts' formats, found by its shape: `{ "mcpServers": {...} }` (Claude
 * Desktop, Claude Code, Cursor) or `{ "servers": {...}, "inputs": [...] }` (VS Code's `.vscode/mcp.json`).
 * Expands `${VAR}`, `${VAR:-default}`, `${env:VAR}`, `${workspaceFolder}` (the folder above `.vscode`, or the
 * file's own) and `${input:id}` (from `inputs`) in command, args, env values, cwd, url and header values, and
 * reads an entry's `envFile` as dotenv. Every problem is a ConfigError naming the file and the JSON path.
 * Nothing here runs anything.
 */
export async function loadConfig(path = '.mcp.json', options: LoadConfigOptions = {}): Promise<McpConfig> {
  return parseConfig(await readConfigText(path), path, options);
}

/**
 * A config file's text; a ConfigError naming it when it cannot be read. A `.toml` file is Codex's config, its
 * `[mcp_servers.<name>]` tables given as the JSON of an `mcpServers` config (see codex.ts; smol-toml, an optional
 * peer, parses it).
 */
export async function readConfigText(path: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(path, code === 'ENOENT' ? 'no such file' : `cannot read: ${(err as Error).message}`);
  }
  if (!path.endsWith('.toml')) return text;
  try {
    return await codexConfigJson(text);
  } catch (err) {
    if (!(err instanceof CodexConfigProblem)) throw err;
    throw new ConfigError(path, err.message, err.jsonPath === undefined ? {} : { jsonPath: err.jsonPath });
  }
}

/** The server names a config file's text holds, none of its entries read. */
export function configServerNames(text: string, path: string, options: LoadConfigOptions = {}): string[] {
  return Object.keys(serversOf(parseJson(text, path), path, options).servers);
}

/**
 * For Claude Code's `~/.claude.json`: the project folders of its local scope that have servers (`projects`
 * keys), for an error that says where a server not found here is; [] for any other file.
 */
export function claudeProjects(text: string, path: string): string[] {
  const raw = parseJson(text, path);
  if (!isClaudeUserFile(raw)) return [];
  return Object.entries(raw.projects).flatMap(([folder, project]) =>
    isObject(project) && isObject(project.mcpServers) && Object.keys(project.mcpServers).length > 0 ? [folder] : [],
  );
}

/**
 * Where a host looks for a config when none is named: `./.mcp.json`, then `./.vscode/mcp.json`, then Cursor's
 * `./.cursor/mcp.json`, then Codex's `./.codex/config.toml`. The first that exists, or undefined.
 */
export async function findConfig(cwd = process.cwd()): Promise<string | undefined> {
  for (const candidate of ['.mcp.json', join('.vscode', 'mcp.json'), join('.cursor', 'mcp.json'), join('.codex', 'config.toml')]) {
    const exists = await access(resolve(cwd, candidate)).then(
      () => true,
      () => false,
    );
    if (exists) return candidate;
  }
  return undefined;
}

/** As loadConfig, from the text of a config file; `path` names it in errors and anchors relative paths. */
export function parseConfig(text: string, path: string, options: LoadConfigOptions = {}): McpConfig {
  const { servers, key } = serversOf(parseJson(text, path), path, options);
  const context = readingContext(path, key, options);
  const out: Record<string, ServerConfig> = {};
  for (const [name, entry] of Object.entries(servers)) {
    if (options.server !== undefined && name !== options.server) continue;
    // defineProperty, so that a server named `__proto__` is an ordinary name.
    Object.defineProperty(out, name, { value: new EntryReader(context, name).read(entry), enumerable: true, writable: true, configurable: true });
  }
  return { mcpServers: out };
}

/** Every problem in a config file, each entry read on its own (`mcp-frame check-config`). */
export function checkConfig(text: string, path: string, options: LoadConfigOptions = {}): ConfigError[] {
  let servers: Record<string, Json>;
  let key: ServersKey;
  try {
    ({ servers, key } = serversOf(parseJson(text, path), path, options));
  } catch (err) {
    return [err as ConfigError];
  }
  const context = readingContext(path, key, options);
  const problems: ConfigError[] = [];
  for (const [name, entry] of Object.entries(servers)) {
    try {
      new EntryReader(context, name).read(entry);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(err);
    }
  }
  return problems;
}

type ServersKey = 'mcpServers' | 'servers';

interface ReadingContext {
  file: string;
  key: ServersKey;
  env: NodeJS.ProcessEnv;
  inputs: Record<string, string>;
  /** The editors' ${workspaceFolder}: the folder above `.vscode` or `.cursor`, else the file's own folder. */
  workspace: string;
  /** ${userHome}. */
  home: string;
}

function readingContext(path: string, key: ServersKey, options: LoadConfigOptions): ReadingContext {
  const folder = dirname(resolve(path));
  return {
    file: path,
    key,
    env: options.env ?? process.env,
    inputs: options.inputs ?? {},
    workspace: basename(folder) === '.vscode' || basename(folder) === '.cursor' ? dirname(folder) : folder,
    home: options.home ?? homedir(),
  };
}

/** A JSON-with-comments file's value (a serve configuration's, say); a ConfigError naming where it is not JSON. */
export function readJsonc(text: string, path: string): unknown {
  return parseJson(text, path);
}

function parseJson(text: string, path: string): Json {
  const body = stripJsonc(text.replace(/^\uFEFF/, ''));
  if (body.trim() === '') throw new ConfigError(path, 'the file is empty: expected an object with "mcpServers" (or "servers")');
  try {
    return JSON.parse(body);
  } catch {
    const at = jsonErrorPosition(body);
    throw new ConfigError(path, at ? `not valid JSON at line ${at.line}, column ${at.column}` : 'not valid JSON');
  }
}

/**
 * JSON with comments (JSONC), as VS Code, Cursor and Claude Code read their config files, made JSON: `//` and
 * `/* *\/` comments and trailing commas become spaces, so that every other character keeps its line and column
 * and a parse error still points where it is in the file. Text inside strings is never touched.
 */
function stripJsonc(text: string): string {
  const out = text.split('');
  const n = text.length;
  /** Where the last character that is not space or comment is, in `out`. */
  let last = -1;
  let i = 0;
  while (i < n) {
    const ch = text[i]!;
    if (ch === '"') {
      last = i;
      i++;
      while (i < n && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      last = i;
      i++;
    } else if (ch === '/' && text[i + 1] === '/') {
      while (i < n && text[i] !== '\n') out[i++] = ' ';
    } else if (ch === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? n : end + 2;
      for (; i < stop; i++) if (text[i] !== '\n' && text[i] !== '\r') out[i] = ' ';
    } else {
      if ((ch === '}' || ch === ']') && last >= 0 && out[last] === ',') out[last] = ' ';
      if (ch !== ' ' && ch !== '\t' && ch !== '\n' && ch !== '\r') last = i;
      i++;
    }
  }
  return out.join('');
}

/** Claude Code's `~/.claude.json`: a `projects` object (its local scope, by folder) beside the user scope's `mcpServers`. */
function isClaudeUserFile(raw: Json): raw is Record<string, unknown> & { projects: Record<string, unknown> } {
  return isObject(raw) && isObject(raw.projects) && (raw.mcpServers === undefined || isObject(raw.mcpServers));
}

/**
 * Claude Code's servers for `cwd`, as it finds them: the local scope (`projects[cwd].mcpServers`), then the
 * project scope (`cwd/.mcp.json`), then the user scope (the top-level `mcpServers`); the first that names a server wins.
 */
function claudeScopes(raw: Record<string, unknown> & { projects: Record<string, unknown> }, cwd: string): Record<string, Json> {
  const project = raw.projects[cwd];
  const local = isObject(project) && isObject(project.mcpServers) ? project.mcpServers : {};
  let shared: Record<string, Json> = {};
  const projectFile = join(cwd, '.mcp.json');
  let text: string | undefined;
  try {
    text = readFileSync(projectFile, 'utf8');
  } catch {
    // No project scope here.
  }
  if (text !== undefined) shared = serversOf(parseJson(text, projectFile), projectFile).servers;
  const out: Record<string, Json> = {};
  for (const scope of [isObject(raw.mcpServers) ? raw.mcpServers : {}, shared, local]) {
    for (const [name, entry] of Object.entries(scope))
      Object.defineProperty(out, name, { value: entry, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** The servers object, under `mcpServers` (Claude, Cursor) or `servers` (VS Code); Claude Code's scopes merged for its user file. */
function serversOf(raw: Json, path: string, options: LoadConfigOptions = {}): { servers: Record<string, Json>; key: ServersKey } {
  if (isClaudeUserFile(raw)) return { servers: claudeScopes(raw, resolve(options.cwd ?? process.cwd())), key: 'mcpServers' };
  if (!isObject(raw)) throw new ConfigError(path, `expected an object with "mcpServers", got ${kind(raw)}`, { jsonPath: '(top level)' });
  const key: ServersKey = raw.mcpServers === undefined && raw.servers !== undefined ? 'servers' : 'mcpServers';
  const servers = raw[key];
  if (!isObject(servers)) {
    throw new ConfigError(path, servers === undefined ? 'missing' : `expected an object, got ${kind(servers)}`, { jsonPath: key });
  }
  return { servers, key };
}

/** Reads one server entry: checks each field's type and expands variables, naming the file, path and server. */
class EntryReader {
  readonly #at: string;
  readonly file: string;
  /** The variables: the context's environment, with the entry's envFile read over it once known. */
  #env: NodeJS.ProcessEnv;

  constructor(
    readonly context: ReadingContext,
    readonly name: string,
  ) {
    this.file = context.file;
    this.#env = context.env;
    this.#at = keyPath(context.key, name);
  }

  read(entry: Json): ServerConfig {
    if (!isObject(entry)) return this.#fail(this.#at, `expected an object, got ${kind(entry)}`);
    // Other hosts' names for Streamable HTTP (Cline's streamableHttp, Roo's streamable-http) are ours for it.
    const type = typeof entry.type === 'string' && STREAMABLE_ALIASES.has(entry.type) ? 'http' : entry.type;
    // An entry with a url and no command is remote: Streamable HTTP unless its type says otherwise (Windsurf
    // names the URL serverUrl, Gemini CLI httpUrl).
    const url = URL_KEYS.find((key) => entry[key] !== undefined);
    if (type === undefined && entry.command === undefined && url !== undefined) return this.#remote(entry, 'http');
    if (type === undefined || type === 'stdio') return this.#stdio(entry, type);
    if (type === 'http' || type === 'sse') return this.#remote(entry, type);
    if (type === 'socket') return this.#socket(entry);
    return this.#fail(`${this.#at}.type`, `expected "stdio", "http", "sse" or "socket", got ${JSON.stringify(type)}`);
  }

  #stdio(e: Record<string, Json>, type: 'stdio' | undefined): StdioServerConfig {
    const at = this.#at;
    if (e.command === undefined) this.#fail(`${at}.command`, 'missing (a stdio server needs a command)');
    const command = this.#string(e.command, `${at}.command`);
    if (command.trim() === '') this.#fail(`${at}.command`, 'is empty');
    const server: StdioServerConfig = { ...(type === undefined ? {} : { type }), command };
    if (e.args !== undefined) server.args = this.#strings(e.args, `${at}.args`);
    const fromFile = e.envFile === undefined ? undefined : this.#envFile(this.#string(e.envFile, `${at}.envFile`), `${at}.envFile`);
    // The entry's env wins over its envFile, as in VS Code.
    if (e.env !== undefined || fromFile !== undefined)
      server.env = { ...fromFile, ...(e.env === undefined ? {} : this.#stringMap(e.env, `${at}.env`)) };
    if (e.cwd !== undefined) server.cwd = resolve(dirname(resolve(this.file)), this.#string(e.cwd, `${at}.cwd`));
    return server;
  }

  #remote(e: Record<string, Json>, type: 'http' | 'sse'): RemoteServerConfig {
    const at = this.#at;
    const key = URL_KEYS.find((k) => e[k] !== undefined);
    if (key === undefined) this.#fail(`${at}.url`, `missing (an ${type} server needs a url)`);
    const server: RemoteServerConfig = { type, url: this.#string(e[key!], `${at}.${key}`) };
    if (e.headers !== undefined) server.headers = this.#stringMap(e.headers, `${at}.headers`);
    if (e.auth !== undefined) server.auth = this.#auth(e.auth, `${at}.auth`);
    if (e.socketPath !== undefined) server.socketPath = resolve(dirname(resolve(this.file)), this.#string(e.socketPath, `${at}.socketPath`));
    return server;
  }

  #auth(v: Json, p: string): RemoteAuthConfig {
    if (!isObject(v)) return this.#fail(p, `expected an object, got ${kind(v)}`);
    const out: RemoteAuthConfig = {};
    for (const [key, value] of Object.entries(v)) {
      const at = keyPath(p, key);
      switch (key) {
        case 'clientId':
        case 'scope':
        case 'clientMetadataUrl':
          out[key] = this.#string(value, at);
          break;
        case 'clientSecret':
          // A secret written in a config file ends up in repositories and backups: it must come from outside.
          if (typeof value === 'string' && !/\$\{(env|input):[^}]+\}|\$\{[A-Za-z_][A-Za-z0-9_]*\}/.test(value)) {
            // biome-ignore lint/suspicious/noTemplateCurlyInString: the message shows the config's own syntax.
            this.#fail(at, 'a client secret must come from the environment or an input ("${env:VAR}" or "${input:id}"), not be written in the file');
          }
          out.clientSecret = this.#string(value, at);
          break;
        case 'callbackPort': {
          const port = value;
          if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
            this.#fail(at, `expected a port number from 1 to 65535, got ${kind(port)}`);
          out.callbackPort = port;
          break;
        }
        case 'params':
          out.params = this.#stringMap(value, at);
          break;
        case 'resource':
          if (value !== false) this.#fail(at, `expected false (to send no resource parameter), got ${kind(value)}`);
          out.resource = false;
          break;
        case 'mode':
          if (value !== 'exchange') this.#fail(at, `expected "exchange" (each caller's token exchanged behind serve), got ${kind(value)}`);
          out.mode = 'exchange';
          break;
        case 'audience':
          out.audience = this.#string(value, at);
          break;
        default:
          this.#fail(at, 'unknown key (auth takes clientId, clientSecret, scope, clientMetadataUrl, callbackPort, params, resource, mode, audience)');
      }
    }
    return out;
  }

  #socket(e: Record<string, Json>): SocketServerConfig {
    const at = this.#at;
    if (e.path === undefined) this.#fail(`${at}.path`, 'missing (a socket server needs a path)');
    return { type: 'socket', path: resolve(dirname(resolve(this.file)), this.#string(e.path, `${at}.path`)) };
  }

  #fail(jsonPath: string, message: string): never {
    throw new ConfigError(this.file, message, { jsonPath, server: this.name });
  }

  #expand(value: string, jsonPath: string): string {
    return value.replace(VARIABLE, (whole: string, scope: string | undefined, variable: string | undefined, fallback: string | undefined) => {
      if (variable === undefined) return sep; // ${/}
      if (scope === 'input') return this.#input(variable, jsonPath);
      if (scope === 'config' || scope === 'command')
        return this.#editorOnly(whole, jsonPath, `the editor's ${scope === 'config' ? 'settings' : 'commands'}`);
      const predefined = scope === undefined ? this.#predefined(variable) : undefined;
      if (predefined !== undefined) return predefined;
      if (scope === undefined && EDITOR_STATE.has(variable))
        return this.#editorOnly(whole, jsonPath, "the editor's state (an open file, a selection)");
      // Own properties only: `${constructor}` is a variable like any other, and not set.
      const v = Object.hasOwn(this.#env, variable) ? this.#env[variable] : undefined;
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      if (v !== undefined) return v;
      throw new ConfigError(this.file, `variable ${variable} is not set (server "${this.name}")`, { jsonPath, server: this.name, variable });
    });
  }

  /** The editors' predefined variables that mean the same here; undefined for any other name. */
  #predefined(variable: string): string | undefined {
    switch (variable) {
      case 'workspaceFolder':
        return this.context.workspace;
      case 'workspaceFolderBasename':
        return basename(this.context.workspace);
      case 'userHome':
        return this.context.home;
      case 'pathSeparator':
        return sep;
      case 'cwd':
        return process.cwd();
      default:
        return undefined;
    }
  }

  /** A variable only the editor can resolve: a ConfigError that names it, never the text passed on. */
  #editorOnly(whole: string, jsonPath: string, what: string): never {
    throw new ConfigError(this.file, `${whole} is an editor variable (${what}) that cannot be resolved outside the editor (server "${this.name}")`, {
      jsonPath,
      server: this.name,
      variable: whole.slice(2, -1),
    });
  }

  /** `${input:id}`: VS Code prompts for it; here it must be given, never passed on literally. */
  #input(id: string, jsonPath: string): string {
    if (Object.hasOwn(this.context.inputs, id)) return this.context.inputs[id]!;
    throw new ConfigError(this.file, `input "${id}" has no value here (server "${this.name}"): pass it as --input ${id}=VALUE`, {
      jsonPath,
      server: this.name,
      variable: `input:${id}`,
    });
  }

  /** An envFile, read as dotenv (KEY=VALUE lines, # comments, optional quotes), relative to the file's folder. */
  #envFile(path: string, jsonPath: string): Record<string, string> {
    let text: string;
    try {
      text = readFileSync(resolve(dirname(resolve(this.file)), path), 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return this.#fail(jsonPath, `cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
    }
    const vars = parseDotenv(text);
    // Its variables can be used in the rest of the entry too.
    this.#env = { ...this.#env, ...vars };
    return vars;
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

/** KEY=VALUE lines; `#` comments, blank lines and `export ` are skipped; single or double quotes are taken off. */
function parseDotenv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(line);
    if (match === null) continue;
    let value = match[2]!;
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2) value = value.slice(1, -1);
    else value = value.replace(/\s+#.*$/, '');
    Object.defineProperty(out, match[1]!, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** The entry called `name`, or undefined: only the config's own names count (`constructor` is not one). */
export function serverNamed(config: McpConfig, name: string): ServerConfig | undefined {
  return Object.hasOwn(config.mcpServers, name) ? config.mcpServers[name] : undefined;
}

/** Server names for an error message, the first `max` of them and how many more. */
export function listNames(config: McpConfig | string[], max = 20): string {
  const names = Array.isArray(config) ? config : Object.keys(config.mcpServers);
  if (names.length === 0) return 'none';
  // A name with characters that are not plain is shown as a JSON string.
  const shown = names.slice(0, max).map((n) => (/^[\w.@-]{1,60}$/.test(n) ? n : JSON.stringify(n.slice(0, 60))));
  return names.length > max ? `${shown.join(', ')} and ${names.length - max} more` : shown.join(', ');
}
