// What the bench reads of processes from Linux /proc: a process's children and the tree under it, and its memory.
// A process that is gone reads as none (no children, zero memory).
import { readFileSync } from 'node:fs';

/** The children of a process. */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The processes under `pid`, itself included. */
export function processTree(pid: number): number[] {
  return [pid, ...childrenOf(pid).flatMap(processTree)];
}

/** VmRSS of a process, in KiB. */
export function rssKiB(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** RSS and PSS of a process, in KiB (smaps_rollup). */
export function memoryOf(pid: number): { rss: number; pss: number } {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return { rss: Number(/^Rss:\s+(\d+)/m.exec(text)?.[1] ?? 0), pss: Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0) };
  } catch {
    return { rss: 0, pss: 0 };
  }
}
