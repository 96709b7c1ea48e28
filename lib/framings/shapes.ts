/*
 * One idle instance of each class that decoding runs through, kept for the life of the process.
 *
 * V8 throws away the optimized code that depends on an object shape (a map) once no object of that shape has
 * lived through two full collections (its --retain-maps-for-n-gc), and the code then runs in the interpreter until
 * it is hot again. An instance's shape is reachable only from live instances, so when a host's decoders come and
 * go (one per HTTP response, one per socket client) every quiet spell with two full collections in it costs
 * the next decoder its optimized code. One idle instance keeps the shapes, and the code, alive. Measured on the
 * bench's small SSE messages, where a full collection runs before each timing and six other peers run between two
 * FrameDecoder runs: see bench/RESULTS.md (its section on the idle decoders, under "Reading the results"). FrameEncoder has none: its code also depends
 * on the shape a stream's writable state takes once written to, which an idle instance does not have, and it lost
 * its optimized code with an idle instance kept as without one.
 */

/** The idle instances, by class; null while one is being made (its constructor asks again). */
const idle = new Map<abstract new (...args: never[]) => unknown, object | null>();

/** Keeps `make()` alive for good, once per class: call it from the class's constructor. */
export function keepShape(of: abstract new (...args: never[]) => unknown, make: () => object): void {
  if (idle.has(of)) return;
  idle.set(of, null);
  idle.set(of, make());
}
