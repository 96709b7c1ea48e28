/*
 * serve's configuration file (`mcp-frame serve --config <file>`): the flags of `mcp-frame serve`, grouped, one key
 * per flag, its name in camelCase in its group (`--max-sessions 64` is `"limits": { "maxSessions": 64 }`), beside
 * the servers (an `mcpServers` map, or `"servers": "<path of a servers file>"`). JSON with comments. A file with none
 * of the group keys is a servers file, as `--config` has always named. Flags given on the command line override the
 * file's; a path in the file is read from the file's folder. An unknown key, or a value of the wrong type, is refused
 * with its path (exit 2): never ignored.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { isObject } from '../jsonrpc.js';
import { ConfigError, readJsonc } from '../client/config.js';
import { urlWithoutCredentials } from '../redaction.js';
import { CliError, EXIT } from './io.js';

/** The flags of each group, as `mcp-frame serve --help` lists them. */
export const GROUPS: Readonly<Record<string, readonly string[]>> = {
  listen: ['host', 'port', 'socket', 'http-socket', 'no-http', 'path', 'sse-path', 'messages-path', 'tls-cert', 'tls-key'],
  access: ['token-env', 'allow-origin', 'allow-host'],
  limits: [
    'max-sessions',
    'rate-limit',
    'max-starting',
    'start-wait-ms',
    'session-idle-ms',
    'open-idle-ms',
    'max-message-bytes',
    'replay-bytes',
    'drain-ms',
    'max-server-requests',
  ],
  gateway: [
    'all',
    'name',
    'prefix',
    'separator',
    'isolate',
    'share',
    'tool-search',
    'pin-tools',
    'allow-tools',
    'deny-tools',
    'allow-prompts',
    'deny-prompts',
    'upstream-start-ms',
    'upstream-list-ms',
    'upstream-call-ms',
    'input',
    'no-browser',
    'callback-port',
    'auth-timeout',
    'authorize-param',
    'client-id',
    'no-resource',
    'device-code',
  ],
  identity: ['auth-issuer', 'public-url', 'required-scope', 'introspection-endpoint', 'dpop', 'policy', 'forward-claims'],
  replicas: ['store', 'store-prefix', 'store-env', 'advertise-url'],
  observe: ['trace', 'log-format', 'log-level', 'metrics', 'metrics-port', 'metrics-host', 'audit-log'],
};

/** Flags whose value is a path: read from the configuration file's folder. */
const PATHS = new Set(['socket', 'http-socket', 'tls-cert', 'tls-key', 'policy', 'audit-log']);

/** The servers keys beside the groups. */
const SERVER_KEYS = new Set(['mcpServers', 'servers', '$schema']);

type Values = Record<string, string | boolean | string[] | undefined>;
type Spec = { type: 'string' | 'boolean'; multiple?: boolean };

const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** A serve configuration read: the flags it sets, and the servers file (the configuration itself, when it holds them). */
interface ServeFile {
  values: Values;
  servers: string | undefined;
}

/**
 * Reads `path` as a serve configuration (flags checked against `specs`); undefined when it is a servers file (no
 * group key). Every problem is a usage error naming the file and the key's path.
 */
export function readServeConfig(path: string, specs: Readonly<Record<string, Spec>>): ServeFile | undefined {
  let raw: unknown;
  try {
    raw = readJsonc(readFileSync(path, 'utf8'), path);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, EXIT.config);
    throw new CliError(`--config ${path}: cannot read it: ${(err as Error).message}`, EXIT.config);
  }
  if (!isObject(raw) || !Object.keys(raw).some((key) => key in GROUPS)) return undefined;
  const fail = (where: string, why: string): never => {
    throw new CliError(`${path}: ${where}: ${why}`, EXIT.usage);
  };
  const values: Values = {};
  for (const [group, body] of Object.entries(raw)) {
    if (SERVER_KEYS.has(group)) continue;
    const flags = GROUPS[group];
    if (flags === undefined) fail(group, `unknown key (${[...Object.keys(GROUPS), 'mcpServers', 'servers'].join(', ')})`);
    if (!isObject(body)) fail(group, 'must be an object');
    const byKey = new Map(flags!.map((flag) => [camel(flag), flag]));
    for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
      const flag = byKey.get(key);
      if (flag === undefined) fail(`${group}.${key}`, `unknown key (${[...byKey.keys()].join(', ')})`);
      values[flag!] = flagValue(`${group}.${key}`, value, specs[flag!]!, fail);
      if (PATHS.has(flag!) && typeof values[flag!] === 'string') values[flag!] = resolve(dirname(path), values[flag!] as string);
    }
  }
  const servers = raw.servers;
  if (typeof servers === 'string') return { values, servers: resolve(dirname(path), servers) };
  if (servers !== undefined && !isObject(servers)) fail('servers', 'must be the path of a servers file, or a map of servers');
  return { values, servers: raw.mcpServers !== undefined || servers !== undefined ? path : undefined };
}

/** A key's value as parseArgs would give its flag's: a boolean, a string (numbers written as such), or a list of them. */
function flagValue(where: string, value: unknown, spec: Spec, fail: (where: string, why: string) => never): string | boolean | string[] {
  if (spec.type === 'boolean') return typeof value === 'boolean' ? value : fail(where, `must be true or false, got ${JSON.stringify(value)}`);
  const one = (v: unknown, at: string): string =>
    typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))
      ? String(v)
      : fail(at, `must be a string or a number, got ${JSON.stringify(v)}`);
  if (spec.multiple !== true) return one(value, where);
  const list = Array.isArray(value) ? value : [value];
  return list.map((v, i) => one(v, Array.isArray(value) ? `${where}[${i}]` : where));
}

/** The flags `args` gives itself (`--name`, `--name=value`, `-e`): these override the file's. */
export function givenFlags(args: readonly string[]): Set<string> {
  const given = new Set<string>();
  for (const arg of args) {
    if (arg === '--') break;
    if (arg.startsWith('--')) given.add(arg.slice(2).split('=')[0]!);
    else if (arg === '-e') given.add('env');
  }
  return given;
}

/** The configuration in force, grouped as the file has it, for --print-config: a store URL without its password. */
export function printedConfig(values: Values, servers: string | undefined): Record<string, unknown> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [group, flags] of Object.entries(GROUPS)) {
    for (const flag of flags) {
      let value = values[flag];
      if (value === undefined || value === false) continue;
      if (flag === 'store' && typeof value === 'string') value = urlWithoutCredentials(value) ?? '[redacted]';
      out[group] ??= {};
      out[group][camel(flag)] = value;
    }
  }
  return { ...out, ...(servers === undefined ? {} : { servers }) };
}
