/*
 * What the gateway keeps for a while on a caller's behalf (a task a server made, a server's requestState passed
 * on to its client): values under the gateway's ids, each until its time is up, and at most so many (the oldest
 * go first), so that what clients never come back for does not pile up.
 */
export class KeptFor<V> {
  readonly #max: number;
  /** Oldest first. */
  readonly #entries = new Map<string, { value: V; until: number }>();

  constructor(max: number) {
    this.#max = max;
  }

  /** Keeps `value` under `id` for `ms`; what is past its time goes, from the oldest on, and past the most, the oldest. */
  set(id: string, value: V, ms: number): void {
    const now = Date.now();
    for (const [key, kept] of this.#entries) {
      if (kept.until >= now && this.#entries.size < this.#max) break;
      this.#entries.delete(key);
    }
    this.#entries.delete(id);
    this.#entries.set(id, { value, until: now + ms });
  }

  /** The value kept under `id`, while its time lasts. */
  get(id: unknown): V | undefined {
    const kept = typeof id === 'string' ? this.#entries.get(id) : undefined;
    return kept === undefined || kept.until < Date.now() ? undefined : kept.value;
  }
}
