/** Held buffers up to this size are kept between frames and reused. */
const SMALL = 64 * 1024;

/**
 * The bytes of one unfinished frame, copied in as they arrive and read out once, when the frame ends. Each byte
 * is copied a bounded number of times whatever the chunking, and each chunk can be collected at once.
 *
 * Keeping a list of the chunks and joining it at the end instead held every byte twice at the peak (4.2N RSS for
 * one N-byte message against 3.6N; bench/RESULTS.md). The buffer doubles: reserving the largest allowed size at
 * once costs nothing until written, but then every frame lands in fresh pages, and decoding 2-8 MiB messages
 * took 1.8x as long; doubled sizes come back from memory the allocator has used before.
 */
export class ByteAccumulator {
  #buf: Buffer | undefined;
  #len = 0;
  readonly #cap: number;

  /** `cap`: the most bytes it will ever hold (the caller checks before appending). */
  constructor(cap: number) {
    this.#cap = cap;
  }

  get length(): number {
    return this.#len;
  }

  /** Makes room for exactly `total` bytes in all, when the frame's size is known in advance. */
  reserve(total: number): void {
    if (this.#buf !== undefined && this.#buf.length >= total) return;
    const grown = Buffer.allocUnsafe(Math.max(total, Math.min(SMALL, this.#cap)));
    if (this.#buf !== undefined && this.#len > 0) this.#buf.copy(grown, 0, 0, this.#len);
    this.#buf = grown;
  }

  append(src: Uint8Array, start = 0, end = src.length): void {
    const need = this.#len + (end - start);
    let buf = this.#buf;
    if (buf === undefined || buf.length < need) {
      const size = need <= SMALL ? SMALL : Math.max(need, 2 * (buf?.length ?? 0));
      const grown = Buffer.allocUnsafe(Math.min(size, Math.max(need, this.#cap)));
      if (buf !== undefined && this.#len > 0) buf.copy(grown, 0, 0, this.#len);
      this.#buf = buf = grown;
    }
    buf.set(src.subarray(start, end), this.#len);
    this.#len = need;
  }

  /** The held bytes, valid until the next append or clear. */
  bytes(): Buffer {
    return this.#buf === undefined ? Buffer.alloc(0) : this.#buf.subarray(0, this.#len);
  }

  /** Forgets the held bytes; a large buffer is let go, a small one kept for the next frame. */
  clear(): void {
    this.#len = 0;
    if (this.#buf !== undefined && this.#buf.length > SMALL) this.#buf = undefined;
  }
}
