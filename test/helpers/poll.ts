// Polls until something holds, for what a test waits on that announces itself nowhere (a store, a process).

/** Calls `attempt` every 100 ms until it returns something other than undefined; fails after `ms`, naming `what`. */
export async function within<T>(ms: number, what: string, attempt: () => Promise<T | undefined>): Promise<T> {
  for (const end = Date.now() + ms; ; ) {
    const result = await attempt();
    if (result !== undefined) return result;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
