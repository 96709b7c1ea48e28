// Process warnings counted instead of printed while a peer runs: the SDK's clients add a listener per
// concurrent request, and a thousand identical warning lines would bury the results.

/** Runs `fn` with warnings counted by name; restores the printers after. */
export async function countingWarnings<T>(fn: () => Promise<T>): Promise<{ result: T; warnings: Map<string, number> }> {
  const warnings = new Map<string, number>();
  const printers = process.listeners('warning');
  process.removeAllListeners('warning');
  const count = (w: Error): void => void warnings.set(w.name, (warnings.get(w.name) ?? 0) + 1);
  process.on('warning', count);
  try {
    return { result: await fn(), warnings };
  } finally {
    process.off('warning', count);
    for (const printer of printers) process.on('warning', printer);
  }
}

/** A sentence for the results, or nothing when no warning was printed. */
export function warningNote(warnings: Map<string, number>, who: string): string {
  const list = [...warnings].map(([name, n]) => `${n} ${name}`).join(', ');
  return list === '' ? '' : `\n\nWarnings printed during the run (${who}): ${list}.`;
}
