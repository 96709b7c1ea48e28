// Programs from Debian's packages that some tests run (redis-server, tinyproxy, nginx). Where one is not installed
// the tests that need it are skipped with a line saying so, except under CI (.ci/run installs each), where its
// absence fails the run.
import { spawnSync } from 'node:child_process';
import { note } from './note.js';

/** True when `command args` runs and exits 0 here. */
export function haveCommand(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

/**
 * For a `before` hook: skips the suite when `command` is missing (saying how to install `pkg`), or fails it under
 * CI. Returns true when the suite runs.
 */
export function requireCommand(ctx: Mocha.Context, command: string, args: string[], pkg = command): boolean {
  if (haveCommand(command, args)) return true;
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') {
    throw new Error(`${command} is not on PATH, and CI needs it (.ci/run installs it with apt-get install -y ${pkg})`);
  }
  note(`(skipped: ${command} is not on PATH; install it with apt-get install -y ${pkg})`);
  ctx.skip();
  return false;
}
