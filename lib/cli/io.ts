import { readFile } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { text as readStreamText } from 'node:stream/consumers';
import { jsonErrorPosition } from '../json-position.js';

/**
 * Exit codes that scripts can tell apart: a tool that reported an error (its result is printed), a usage
 * error, a config that cannot be used, a server that cannot be reached or went away, a timeout, and a JSON-RPC
 * error response. Any other failure is 1.
 */
export const EXIT = { ok: 0, toolError: 1, failure: 1, usage: 2, config: 3, connection: 4, timeout: 5, rpcError: 6, auth: 7 } as const;

/** A failure the command line reports as one line on stderr, with this exit code. */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly exitCode: number;
  /**
   * Exit as soon as the message is out, without waiting for what is still closing (a server's grace period):
   * the process's exit hook ends the servers' process groups.
   */
  readonly exitNow: boolean;
  /** The message is out already (a JSON log line of the command's own): it is not written again. */
  readonly logged: boolean;

  constructor(message: string, exitCode = 1, options: { exitNow?: boolean; logged?: boolean } = {}) {
    super(message);
    this.exitCode = exitCode;
    this.exitNow = options.exitNow === true;
    this.logged = options.logged === true;
  }
}

/** Reads a whole file, or stdin for `-` or no path; a failure names the path. */
export async function readInput(path: string | undefined, what: string, exitCode: number = EXIT.failure): Promise<string> {
  if (path === undefined || path === '-') return readStreamText(process.stdin);
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
    throw new CliError(`cannot read ${what} ${path}: ${reason}`, exitCode);
  }
}

/** JSON.parse with the failure placed at a line and column of the named input. */
export function parseJsonInput(text: string, name: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    const at = jsonErrorPosition(text);
    throw new CliError(at ? `${name} is not JSON (line ${at.line}, column ${at.column})` : `${name} is not JSON`);
  }
}

/** Writes to stdout and resolves once it is flushed; a reader that went away (EPIPE) is not an error. */
export function writeStdout(data: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(data, (err) => {
      if (err && (err as NodeJS.ErrnoException).code !== 'EPIPE') reject(err);
      else resolve();
    });
  });
}

type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** node:util's parseArgs, with its errors turned into usage errors (exit code 2) that show `usage`. */
export function parseOptions<const O extends OptionSpecs>(
  args: string[],
  options: O,
  usage: string,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>> {
  try {
    // Typed by the specs: a `multiple` option's value is a string[], a boolean one's a boolean.
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    // An unknown option is said plainly, with the nearest known one, and the usage's first line only.
    const unknown = (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'(-[^']*)'/.exec((err as Error).message)?.[1] : undefined;
    if (unknown !== undefined) {
      const near = nearest(unknown.replace(/^-+/, '').split('=')[0]!, Object.keys(options));
      const hint = near === undefined ? '' : `; did you mean --${near}?`;
      throw new CliError(`unknown option ${unknown}${hint}\n${usage.split('\n')[0]}`, EXIT.usage);
    }
    throw new CliError(`${(err as Error).message}\n${usage}`, EXIT.usage);
  }
}

/** The name within two edits of `typed` (an option's, a tool's), the nearest, or undefined. */
export function nearest(typed: string, names: string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = editDistance(typed, name);
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** Levenshtein distance, with a swap of two neighbours counted as one edit. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** A positive whole number from an option's text, or a usage error naming the option. */
export function positiveInteger(text: string | undefined, option: string, usage: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new CliError(`${option} takes a positive whole number, got ${JSON.stringify(text)}\n${usage}`, EXIT.usage);
  return n;
}

/**
 * `-e KEY=VALUE` for a server's environment, and `-e KEY` alone for this process's value of KEY (as `docker -e`
 * takes it), so that a secret need not be on the command line; a KEY that is not set is a config error.
 */
export function envValues(list: string[] | undefined, usage: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const name = /^[A-Za-z_][A-Za-z0-9_]*$/;
  const pairs: string[] = [];
  for (const item of list ?? []) {
    if (item.includes('=') || !name.test(item)) {
      pairs.push(item);
      continue;
    }
    const value = env[item];
    if (value === undefined) throw new CliError(`-e ${item}: variable ${item} is not set here, so there is no value to pass on`, EXIT.config);
    pairs.push(`${item}=${value}`);
  }
  return keyValues(pairs, '-e', usage, name);
}

/** `KEY=VALUE` flags (`--input`, `-e`, `--arg`) as a map, or a usage error naming the bad one. */
export function keyValues(list: string[] | undefined, flag: string, usage: string, key = /^[^=]+$/): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of list ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || !key.test(pair.slice(0, eq)))
      throw new CliError(`${flag} takes KEY=VALUE, got ${JSON.stringify(pair.slice(0, 40))}\n${usage}`, EXIT.usage);
    // defineProperty, so that a key named __proto__ is an ordinary key.
    Object.defineProperty(out, pair.slice(0, eq), { value: pair.slice(eq + 1), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
