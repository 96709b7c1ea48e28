/*
 * How many servers start at once. Starting a stdio server costs a CPU-heavy moment (a Node server loads its
 * modules: about 0.1 s of CPU each, measured with 400 opens at once on 2 cores, which took 38-46 s when every
 * spawn ran at once and each slowed the others). A session's start waits its turn behind at most `max` others;
 * one that waits longer than `waitMs` is refused (503 with Retry-After), so a burst of opens gets quick answers
 * instead of timeouts that leave sessions nobody uses.
 */
import { Refusal } from '../../protocol/refusal.js';

export class StartGate {
  readonly max: number;
  readonly waitMs: number;
  #running = 0;
  readonly #waiting: Array<{ go: () => void; refuse: (why: string) => void; timer: NodeJS.Timeout }> = [];

  constructor(max: number, waitMs: number) {
    this.max = max;
    this.waitMs = waitMs;
  }

  /** Starts running now, and those waiting for a turn. */
  get load(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waiting.length };
  }

  /**
   * A turn to start a server: resolves with the function that ends it (call it once the server answered, or
   * failed). A Refusal (503, Retry-After 1) after `waitMs` without a turn.
   */
  enter(): Promise<() => void> {
    if (this.#running < this.max) return Promise.resolve(this.#turn());
    return new Promise((resolve, reject) => {
      const waiter = {
        go: () => {
          clearTimeout(waiter.timer);
          resolve(this.#turn());
        },
        refuse: (why: string) => {
          clearTimeout(waiter.timer);
          reject(new Refusal(503, why, { headers: { 'Retry-After': '1' } }));
        },
        timer: setTimeout(() => {
          this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
          waiter.refuse(
            `${this.max} server${this.max === 1 ? ' is' : 's are'} starting and ${this.#waiting.length} more wait${this.#waiting.length === 1 ? 's' : ''}: try again shortly`,
          );
        }, this.waitMs),
      };
      this.#waiting.push(waiter);
    });
  }

  /** Refuses every start still waiting (serve closing). */
  close(): void {
    for (const waiter of this.#waiting.splice(0)) waiter.refuse('the server is shutting down');
  }

  #turn(): () => void {
    this.#running++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#running--;
      this.#waiting.shift()?.go();
    };
  }
}

/** How long a start holds its turn at most: a server that hangs at start does not hold it for ever. */
const HOLD_MS = 10_000;

/**
 * Ends `leave` (a start's turn) once `child` has started and answered its first message, failed to start, or
 * closed, or after `limitMs`.
 */
export function holdUntilAnswered(
  child: {
    started: Promise<unknown>;
    once(event: 'message' | 'close', listener: () => void): unknown;
    off(event: 'message' | 'close', listener: () => void): unknown;
  },
  leave: () => void,
  limitMs = HOLD_MS,
): void {
  const timer = setTimeout(end, limitMs);
  timer.unref();
  function end(): void {
    clearTimeout(timer);
    child.off('message', end);
    child.off('close', end);
    leave();
  }
  child.once('message', end);
  child.once('close', end);
  child.started.catch(end);
}
