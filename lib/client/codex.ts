/*
 * Codex's config (`~/.codex/config.toml`, or a project's `.codex/config.toml`): its `[mcp_servers.<name>]` tables
 * as the `mcpServers` entries every other host's format reads as. TOML is parsed by smol-toml, an optional peer
 * loaded only for a `.toml` file (a small, well-kept parser with no dependencies of its own: writing TOML's
 * grammar again here would be code to keep for one host's file).
 *
 * A stdio server: `command`, `args`, `env`, `cwd`, and `env_vars` (names of variables passed on from the
 * environment). A remote one: `url` (Streamable HTTP: Codex speaks no SSE), `http_headers` (literal values),
 * `env_http_headers` (a header's value from a variable) and `bearer_token_env_var` (`Authorization: Bearer` from a
 * variable). `enabled = false` leaves a server out; the keys for Codex's own use (timeouts, tool lists) are left
 * alone.
 */
import { missingPeer } from '../errors.js';
import { isObject } from '../jsonrpc.js';

type Toml = Record<string, unknown>;

/** A problem in the file: what, and where (a key path such as `mcp_servers.github.url`). */
export class CodexConfigProblem extends Error {
  constructor(
    message: string,
    readonly jsonPath?: string,
  ) {
    super(message);
  }
}

/** Codex's own variable-name rule for the names it reads values from. */
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

async function loadToml(): Promise<{ parse(text: string): Toml }> {
  try {
    return (await import('smol-toml')) as { parse(text: string): Toml };
  } catch (err) {
    throw missingPeer('reading a .toml config (Codex) works', 'smol-toml', err);
  }
}

/** The text of a Codex config file as the JSON of an `mcpServers` config; a CodexConfigProblem saying where. */
export async function codexConfigJson(text: string): Promise<string> {
  const { parse } = await loadToml();
  let raw: Toml;
  try {
    raw = parse(text);
  } catch (err) {
    const { line, column } = err as { line?: number; column?: number };
    throw new CodexConfigProblem(`not valid TOML${line === undefined ? '' : ` at line ${line}, column ${column ?? 0}`}`);
  }
  const tables = raw.mcp_servers;
  if (tables === undefined) throw new CodexConfigProblem('missing: Codex keeps its servers under [mcp_servers.<name>]', 'mcp_servers');
  if (!isObject(tables)) throw new CodexConfigProblem('expected a table of servers', 'mcp_servers');
  const servers: Record<string, unknown> = {};
  for (const [name, table] of Object.entries(tables)) {
    const where = `mcp_servers.${name}`;
    if (!isObject(table)) throw new CodexConfigProblem('expected a table', where);
    if (table.enabled === false) continue;
    Object.defineProperty(servers, name, { value: entryOf(table, where), enumerable: true, writable: true, configurable: true });
  }
  return JSON.stringify({ mcpServers: servers });
}

function entryOf(table: Toml, where: string): Toml {
  if (typeof table.url === 'string') {
    const headers: Record<string, string> = { ...strings(table.http_headers, `${where}.http_headers`) };
    for (const [header, variable] of Object.entries(strings(table.env_http_headers, `${where}.env_http_headers`)))
      headers[header] = `\${${variableName(variable, `${where}.env_http_headers.${header}`)}}`;
    if (table.bearer_token_env_var !== undefined)
      headers.Authorization = `Bearer \${${variableName(table.bearer_token_env_var, `${where}.bearer_token_env_var`)}}`;
    return { type: 'http', url: table.url, ...(Object.keys(headers).length === 0 ? {} : { headers }) };
  }
  if (typeof table.command !== 'string') throw new CodexConfigProblem('a server needs a command (stdio) or a url', where);
  const env: Record<string, string> = { ...strings(table.env, `${where}.env`) };
  const passed = table.env_vars ?? [];
  if (!Array.isArray(passed)) throw new CodexConfigProblem('expected an array of variable names', `${where}.env_vars`);
  for (const [i, variable] of passed.entries()) {
    const name = variableName(variable, `${where}.env_vars[${i}]`);
    env[name] ??= `\${${name}}`;
  }
  return {
    command: table.command,
    ...(table.args === undefined ? {} : { args: table.args }),
    ...(Object.keys(env).length === 0 ? {} : { env }),
    ...(table.cwd === undefined ? {} : { cwd: table.cwd }),
  };
}

function strings(value: unknown, where: string): Record<string, string> {
  if (value === undefined) return {};
  if (!isObject(value) || !Object.values(value).every((v) => typeof v === 'string'))
    throw new CodexConfigProblem('expected a table of strings', where);
  return value as Record<string, string>;
}

function variableName(value: unknown, where: string): string {
  if (typeof value !== 'string' || !VARIABLE_NAME.test(value)) throw new CodexConfigProblem('expected the name of an environment variable', where);
  return value;
}
