/*
 * What every command that talks to a server shares: the server's entry, from `-- <command>`, `--url` or the
 * config a host would find, and the headers given for a remote one.
 */
import {
  ConfigError,
  claudeProjects,
  configServerNames,
  findConfig,
  listNames,
  parseConfig,
  readConfigText,
  type ServerConfig,
  serverNamed,
} from '../client/config.js';
import { CliError, EXIT, keyValues } from './io.js';

/** An http(s) URL given where a server's name goes (as the Inspector and mcp-remote take one): a remote server. */
export function isServerUrl(text: string | undefined): text is string {
  return text !== undefined && /^https?:\/\/[^\s]+$/i.test(text);
}

/** How a command names its server. */
interface EntryOptions {
  /** The server's name in the config; undefined for an ad hoc server (`-- <command>`). */
  server: string | undefined;
  /** `-- <command> [args...]`: a server started without a config. */
  command: string[] | undefined;
  /** `-e KEY=VALUE` for an ad hoc server. */
  env: Record<string, string>;
  /** The config named with --config; undefined: found as hosts find theirs. */
  config: string | undefined;
  /** Values for `${input:id}` in a VS Code config. */
  inputs: Record<string, string>;
  /** `--url`: a remote server named by its URL, with these headers. */
  url?: string;
  headers?: Record<string, string>;
  /** `--socket-path`: the local socket the --url server is reached through. */
  socketPath?: string;
  /** Output is JSON: nothing else on stderr. */
  json?: boolean;
  /** The command's usage, for the error that no server was named. */
  usage?: string;
  /** Says which config was found (none given). @defaultValue a line on stderr */
  found?: (path: string) => void;
}

/** The line that says which config a command found: `mcp-frame call: using .mcp.json`. */
const foundLine =
  (who: string) =>
  (path: string): void =>
    void process.stderr.write(`mcp-frame ${who}: using ${path}\n`);

/**
 * `--header 'Name: value'` and `--header-env Name=VAR` (the value from the environment, so that it is in no argv),
 * for `call --url` and `bridge`.
 */
export function headersOf(
  lines: string[] | undefined,
  fromEnv: string[] | undefined,
  usage: string,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of lines ?? []) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new CliError(`--header takes 'Name: value', got ${JSON.stringify(line.slice(0, 40))}\n${usage}`, EXIT.usage);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  for (const [name, variable] of Object.entries(keyValues(fromEnv, '--header-env', usage))) {
    const value = env[variable];
    if (value === undefined || value === '') throw new CliError(`--header-env ${name}=${variable}: variable ${variable} is not set`, EXIT.config);
    headers[name] = value;
  }
  return headers;
}

/**
 * The entry of the server asked for: `-- <command>` as given, or from --config or the config a host would
 * find (`./.mcp.json`, then `./.vscode/mcp.json`, said on stderr). Only that entry is read: a variable another
 * entry needs does not stop this one.
 */
export async function serverEntry(opts: EntryOptions, who = 'call'): Promise<ServerConfig> {
  if (opts.command !== undefined) {
    const [command, ...args] = opts.command;
    return { command: command!, args, env: opts.env };
  }
  if (opts.url !== undefined) {
    try {
      new URL(opts.url);
    } catch {
      throw new CliError(`--url is not a URL: ${JSON.stringify(opts.url.slice(0, 80))}`, EXIT.usage);
    }
    return {
      type: 'http',
      url: opts.url,
      ...(opts.headers === undefined || Object.keys(opts.headers).length === 0 ? {} : { headers: opts.headers }),
      ...(opts.socketPath === undefined ? {} : { socketPath: opts.socketPath }),
    };
  }
  const name = opts.server;
  if (name === undefined) throw await noServerNamed('name a server (or give --url, or -- <command>)', opts.usage, opts.config);
  return withConfig(opts.config, opts.json === true ? undefined : (opts.found ?? foundLine(who)), (text, path) => {
    const entry = serverNamed(parseConfig(text, path, { server: name, inputs: opts.inputs }), name);
    if (entry === undefined)
      throw new CliError(
        `no server "${name}" in ${path}; it has: ${listNames(configServerNames(text, path))}${projectsNote(text, path)}`,
        EXIT.config,
      );
    return entry;
  });
}

/** For Claude Code's user file: the project folders whose local scope has servers, where a name may be. */
function projectsNote(text: string, path: string): string {
  const cwd = process.cwd();
  const others = claudeProjects(text, path).filter((folder) => folder !== cwd);
  return others.length === 0 ? '' : ` (for this folder, ${cwd}; Claude Code's local scope has servers for: ${listNames(others, 5)})`;
}

/**
 * The usage error of a command that needs a server and was given none: it names the servers of the config given
 * or found, so that the next try can be right (a config that cannot be read is said once a server is named).
 */
async function noServerNamed(lead: string, usage: string | undefined, config: string | undefined): Promise<CliError> {
  const path = config ?? (await findConfig());
  let known = '';
  if (path !== undefined) {
    try {
      known = `; ${path} has: ${listNames(configServerNames(await readConfigText(path), path))}`;
    } catch {
      // Said when a server is named: this error is about the missing name.
    }
  }
  return new CliError(`${lead}${known}${usage === undefined ? '' : `\n${usage}`}`, EXIT.usage);
}

/**
 * Reads the config named with --config, or the one a host would find (said on stderr when `say`), and hands its
 * text to `read`; a ConfigError from either is a CliError with the config's exit code.
 */
async function withConfig<T>(
  config: string | undefined,
  say: ((path: string) => void) | undefined,
  read: (text: string, path: string) => T,
): Promise<T> {
  const path = config ?? (await findConfig());
  if (path === undefined)
    throw new CliError(
      'no config: none of ./.mcp.json, ./.vscode/mcp.json, ./.cursor/mcp.json, ./.codex/config.toml exists; name one with --config',
      EXIT.config,
    );
  if (config === undefined) say?.(path);
  try {
    return read(await readConfigText(path), path);
  } catch (err) {
    if (err instanceof ConfigError || (err as { code?: unknown }).code === 'MISSING_PEER') throw new CliError((err as Error).message, EXIT.config);
    throw err;
  }
}

/**
 * The entry of the one server a command names (`positionals`, nothing more), from `--config` or the config a
 * host would find, with `--input` values: as `call` reads it.
 */
export async function namedEntry(
  positionals: string[],
  values: { config?: string | undefined; input?: string[] | undefined },
  usage: string,
  who: string,
): Promise<ServerConfig> {
  const [name, ...extra] = positionals;
  if (name === undefined) throw await noServerNamed('name a server', usage, values.config);
  if (extra.length > 0) throw new CliError(`unexpected argument ${JSON.stringify(extra[0])}: name one server\n${usage}`, EXIT.usage);
  return serverEntry({ server: name, command: undefined, env: {}, config: values.config, inputs: keyValues(values.input, '--input', usage) }, who);
}

/**
 * The entries of several servers of one config (for a gateway): every one with `all`, else those named, in the
 * order named. The config is --config or the one a host would find.
 */
export async function serverEntries(
  names: string[],
  all: boolean,
  opts: { config: string | undefined; inputs: Record<string, string>; found?: (path: string) => void },
  who: string,
): Promise<Array<[string, ServerConfig]>> {
  return withConfig(opts.config, opts.found ?? foundLine(who), (text, path) => {
    const known = configServerNames(text, path);
    const wanted = all ? known : names;
    const missing = wanted.filter((name) => !known.includes(name));
    if (missing.length > 0)
      throw new CliError(
        `no server ${missing.map((n) => `"${n}"`).join(', ')} in ${path}; it has: ${listNames(known)}${projectsNote(text, path)}`,
        EXIT.config,
      );
    if (wanted.length === 0) throw new CliError(`${path} names no server`, EXIT.config);
    // Each entry read alone: a variable one entry needs and the environment lacks names that entry.
    return wanted.map((name): [string, ServerConfig] => [name, serverNamed(parseConfig(text, path, { server: name, inputs: opts.inputs }), name)!]);
  });
}
