import { readFileSync } from 'node:fs';

/**
 * Waits up to `ms` for process `pid` to be gone; true when it is. An orphan's zombie counts as gone: it has exited,
 * and only its entry waits for init, which may take its time (here it reaped one killed server 1.2-1.5 s after its
 * death, and later under load). A child of this process is waited for until it is reaped: its 'exit' handlers
 * (a session's end, a log line) run then, and a test goes on to check what they did.
 */
export async function gone(pid: number, ms = 2000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    if (isOrphanZombie(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

/**
 * Linux: the fields of /proc/<pid>/stat after the command name (state first, then the parent's pid; utime and
 * stime at 11 and 12), or undefined where the process or /proc is not there. The name is in parentheses and may
 * itself hold ") ", so the fields start after the last one.
 */
export function procStat(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** utime + stime of a process, in ms (Linux /proc, whose clock ticks 100 times a second); its children not counted. */
export function cpuMs(pid: number): number {
  const fields = procStat(pid);
  if (fields === undefined) throw new Error(`no /proc/${pid}/stat: measuring CPU needs Linux and a live process`);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** Linux: the process has exited and waits to be reaped (state Z) by another parent than this process. */
function isOrphanZombie(pid: number): boolean {
  const [state, ppid] = procStat(pid) ?? [];
  return state === 'Z' && Number(ppid) !== process.pid;
}
