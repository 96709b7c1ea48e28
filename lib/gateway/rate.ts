/*
 * Rate limits: `<n>/<s|m|h>`, n calls a second, a minute or an hour, per caller (serve's --rate-limit, and a
 * policy rule's `rate` for the tools it matches).
 *
 * Counted as a sliding log: each key keeps the times of its calls within the last period, and a call is taken
 * while fewer than n are there. So a caller may make n calls at once, and never more than n in any period of that
 * length, wherever it starts (a fixed window lets 2n through across its edge; a leaky bucket with a burst of n
 * lets n plus the refill through); a call refused is told how long until the oldest call leaves the period. The
 * memory of a key is at most n times, so n is at most MAX_COUNT; a key with no call in its period holds nothing
 * and is dropped. Where replicas share a store the same log is kept in it (a sorted set per key, on the store's
 * clock; see the store's `rate`), so a limit is n across every replica, not n per replica.
 */

/** A limit: `count` calls in `periodMs`. */
export interface Rate {
  count: number;
  periodMs: number;
  /** As written (`10/m`), for what names it. */
  text: string;
}

const PERIODS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000 };
/** The most calls a limit may count (the times a key keeps). */
const MAX_COUNT = 10_000;

/** `<n>/<s|m|h>` as a Rate; a RangeError saying what a rate is, naming `where`, when it is not one. */
export function parseRate(text: unknown, where: string): Rate {
  const m = typeof text === 'string' ? /^\s*(\d{1,9})\s*\/\s*([smh])\s*$/.exec(text) : null;
  const count = m === null ? 0 : Number(m[1]);
  if (m === null || count < 1 || count > MAX_COUNT)
    throw new RangeError(
      `${where}: a rate is <n>/<s|m|h> (n calls a second, a minute or an hour; n from 1 to ${MAX_COUNT}), got ${JSON.stringify(text)}`,
    );
  return { count, periodMs: PERIODS[m[2]!]!, text: `${count}/${m[2]}` };
}

/** Takes one call of `key` under `rate`: 0 when taken, else the milliseconds until one would be. */
export type TakeRate = (key: string, rate: Rate) => Promise<number>;

/** The keys kept at most (past it, those whose last call is oldest are forgotten first: each then starts afresh). */
const KEYS_MAX = 100_000;

/** Rate limits counted in this process. */
export class LocalRates {
  /** Each key's calls within its period (oldest first), the keys in the order last called. */
  readonly #calls = new Map<string, { times: number[]; periodMs: number }>();

  take(key: string, rate: Rate, now = Date.now()): number {
    const entry = this.#calls.get(key) ?? { times: [], periodMs: rate.periodMs };
    const times = entry.times;
    while (times.length > 0 && times[0]! <= now - rate.periodMs) times.shift();
    if (times.length >= rate.count) return Math.max(1, Math.ceil(times[0]! + rate.periodMs - now));
    times.push(now);
    this.#calls.delete(key);
    this.#calls.set(key, entry);
    for (const [old, { times: last, periodMs }] of this.#calls) {
      if (this.#calls.size <= KEYS_MAX && last.at(-1)! > now - periodMs) break;
      this.#calls.delete(old);
    }
    return 0;
  }

  /** Keys held now (a call within their period, or not yet swept). */
  get size(): number {
    return this.#calls.size;
  }
}
