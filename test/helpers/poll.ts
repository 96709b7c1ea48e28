// Polls until something holds, for what a test waits on that announces itself nowhere (a store, a process, a log).
// The one waiting helper of the tests: what does announce itself (an event, a stream's data) is awaited as such.

/**
 * Calls `attempt` every `everyMs` (100 ms) until it gives something other than undefined; fails after `ms`,
 * naming `what`.
 */
export async function within<T>(ms: number, what: string, attempt: () => T | undefined | Promise<T | undefined>, everyMs = 100): Promise<T> {
  for (const end = Date.now() + ms; ; ) {
    const result = await attempt();
    if (result !== undefined) return result;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Waits, as `within` does, until `holds()` is true. */
export async function until(ms: number, what: string, holds: () => boolean, everyMs = 100): Promise<void> {
  await within(ms, what, () => (holds() ? true : undefined), everyMs);
}
