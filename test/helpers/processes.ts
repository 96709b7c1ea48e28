import { readFileSync } from 'node:fs';

/**
 * Waits up to `ms` for process `pid` to be gone; true when it is. A zombie counts as gone: it has exited, and only
 * its entry waits to be reaped. An orphan's new parent may take its time over that (here, init reaped one killed
 * server 1.2-1.5 s after its death, and later under load), which is not the process still running.
 */
export async function gone(pid: number, ms = 2000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    if (isZombie(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

/** Linux: the process has exited and waits to be reaped (state Z in /proc). False where that cannot be read. */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the command name, which is in parentheses and may itself hold ") ".
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false;
  }
}
