import { ConfigError, checkConfig, findConfig, readConfigText } from '../client/config.js';
import { safeLine } from '../errors.js';
import { CliError, EXIT, keyValues, parseOptions, writeStdout } from './io.js';

export const USAGE = 'usage: mcp-frame check-config [path] [--input id=value]...';

/**
 * `mcp-frame check-config [path]`: reads every entry of a config file (or the one a host would find) and
 * reports every problem at once, one a line. Exits 0 when there is none, 1 otherwise.
 */
export async function checkConfigCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions(args, { input: { type: 'string', multiple: true } }, USAGE);
  if (positionals.length > 1) throw new CliError(USAGE, EXIT.usage);
  const path = positionals[0] ?? (await findConfig());
  if (path === undefined)
    throw new CliError('no config: none of ./.mcp.json, ./.vscode/mcp.json, ./.cursor/mcp.json, ./.codex/config.toml exists; name one');
  const inputs = keyValues(values.input, '--input', USAGE);
  let problems: ConfigError[];
  try {
    problems = checkConfig(await readConfigText(path), path, { inputs });
  } catch (err) {
    throw err instanceof ConfigError ? new CliError(err.message) : err;
  }
  await writeStdout(problems.length === 0 ? `${path}: ok\n` : `${problems.map((p) => safeLine(p.message)).join('\n')}\n`);
  return problems.length === 0 ? 0 : 1;
}
