import { constants } from 'node:buffer';

/** Held buffers up to this size are kept between frames and reused. */
const SMALL = 64 * 1024;
/** Buffers up to this size come from the allocator; a frame that outgrows it moves to a resizable ArrayBuffer. */
const RECYCLED = 16 * 1024 * 1024;
/** How far a resizable buffer grows ahead of the bytes it holds: one resize per 256 KiB rather than per chunk. */
const STEP = 256 * 1024;
/**
 * Past this size a growing buffer goes straight to RECYCLED bytes instead of doubling. Each outgrown buffer stays
 * resident until a collection, and the source's chunks with it: growing 1, 4, 16 MiB (quadrupling, as before)
 * left 5 MiB of outgrown buffers behind a 6 MiB message (a peak of 3.3N-3.7N for messages of 4-12 MiB fed from
 * memory), where one step leaves at most 1 MiB (2.2N-2.7N). Pages never written are not resident, so the large
 * step costs no memory, and the allocator hands a buffer of that size back to the next frame. Fewer copies also
 * mean fewer allocations outside the engine's heap, which start a full collection once they add up.
 */
const ONE_STEP = 1024 * 1024;

/**
 * The bytes of one unfinished frame, copied in as they arrive and read out once, when the frame ends. Each byte
 * is copied a bounded number of times whatever the chunking, and each chunk can be collected at once.
 *
 * Up to 1 MiB the buffer doubles; past that it goes to 16 MiB in one step. The allocator hands buffers of that
 * size back to the next frame from memory it has used before; reserving the largest allowed size at once instead
 * put every frame in fresh pages, and decoding 1-16 MiB messages took about 1.5x as long (bench/RESULTS.md). A
 * frame past 16 MiB moves to one resizable ArrayBuffer that grows in place (no copy, no outgrown halves left for
 * the collector) and whose pages are given back to the system by `clear()`, at once rather than at some later
 * collection: one N-byte message then peaks at 2.5N, against 3.6N, at the price of fresh pages for each such
 * frame (the bench's copy floor with fresh pages measures that price). Keeping a list of the chunks and joining
 * it at the end held every byte twice at the peak (4.2N RSS for one N-byte message). A frame whose bulk is long
 * string literals (see large.ts) is parsed from these bytes with no whole text made, and cleared after the parse.
 */
export class ByteAccumulator {
  #buf: Buffer | undefined;
  /** The resizable storage under `#buf` once the frame is past RECYCLED. */
  #large: ArrayBuffer | undefined;
  #len = 0;
  readonly #cap: number;

  /** `cap`: the most bytes it will ever hold (the caller checks before appending). */
  constructor(cap: number) {
    this.#cap = cap;
  }

  get length(): number {
    return this.#len;
  }

  /** Makes room for `total` bytes in all, when the frame's size is known in advance. */
  reserve(total: number): void {
    if (total > RECYCLED) {
      // Straight to the resizable buffer, which then grows with the bytes that come rather than at once.
      if (this.#large === undefined) this.#moveToLarge(this.#len);
    } else if (this.#buf === undefined || this.#buf.length < total) {
      this.#grow(Math.max(total, Math.min(SMALL, this.#cap)));
    }
  }

  append(src: Uint8Array, start = 0, end = src.length): void {
    const need = this.#len + (end - start);
    if ((this.#buf?.length ?? 0) < need) {
      if (this.#large !== undefined) this.#resize(Math.min(need + STEP, Math.max(need, this.#cap)));
      else {
        const held = this.#buf?.length ?? 0;
        const grown = held >= ONE_STEP ? RECYCLED : 2 * held;
        this.#grow(Math.min(need <= SMALL ? SMALL : Math.max(need, grown), Math.max(need, this.#cap)), need);
      }
    }
    this.#buf!.set(src.subarray(start, end), this.#len);
    this.#len = need;
  }

  /** The held bytes, valid until the next append or clear. */
  bytes(): Buffer {
    return this.#buf === undefined ? Buffer.alloc(0) : this.#buf.subarray(0, this.#len);
  }

  /**
   * Forgets the held bytes: a large buffer is let go (the pages of a resizable one returned to the system now),
   * a small one kept for the next frame. Callers clear as soon as a frame's bytes are decoded to text, before
   * the JSON is parsed, so that the bytes and the parsed message are not held at once.
   */
  clear(): void {
    this.#len = 0;
    if (this.#large !== undefined) {
      this.#large.resize(0);
      this.#large = undefined;
      this.#buf = undefined;
    } else if (this.#buf !== undefined && this.#buf.length > SMALL) {
      this.#buf = undefined;
    }
  }

  /** Room for `size` bytes, the held ones kept; past RECYCLED, room for just the `need` bytes there are. */
  #grow(size: number, need = size): void {
    if (size > RECYCLED && this.#moveToLarge(need)) return;
    const old = this.#buf;
    this.#buf = Buffer.allocUnsafe(size);
    if (old !== undefined && this.#len > 0) old.copy(this.#buf, 0, 0, this.#len);
  }

  /** Moves the held bytes to a resizable buffer of `size`; false where none can be had. */
  #moveToLarge(size: number): boolean {
    const large = resizable(this.#cap);
    if (large === undefined) return false;
    const old = this.#buf;
    this.#large = large;
    this.#resize(Math.max(size, this.#len));
    if (old !== undefined && this.#len > 0) old.copy(this.#buf!, 0, 0, this.#len);
    return true;
  }

  /**
   * The resizable buffer grows with the bytes held, at most STEP ahead of them: the engine zeroes every byte it
   * had when it shrinks, and zeroing pages never written would first fault them in (116 ms for 32 MiB, against
   * 6 ms for written ones).
   */
  #resize(size: number): void {
    this.#large!.resize(size);
    this.#buf = Buffer.from(this.#large!, 0, size);
  }
}

/** An empty ArrayBuffer that can grow to `cap` bytes, or undefined where the address space cannot be reserved. */
function resizable(cap: number): ArrayBuffer | undefined {
  try {
    return new ArrayBuffer(0, { maxByteLength: Math.min(cap, constants.MAX_LENGTH) });
  } catch {
    return undefined;
  }
}
