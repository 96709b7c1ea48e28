/** Ways to cut one byte string into the chunks a stream might deliver. */

/** A small seeded PRNG (mulberry32), so a failing random split can be replayed from its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function whole(buf: Buffer): Buffer[] {
  return [buf];
}

export function byteByByte(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i++) out.push(buf.subarray(i, i + 1));
  return out;
}

export function splitAt(buf: Buffer, at: number): Buffer[] {
  return [buf.subarray(0, at), buf.subarray(at)];
}

/** Pieces of 1..maxSize bytes, sizes drawn from `random`. */
export function randomChunks(buf: Buffer, random: () => number, maxSize: number): Buffer[] {
  const out: Buffer[] = [];
  let i = 0;
  while (i < buf.length) {
    const size = 1 + Math.floor(random() * maxSize);
    out.push(buf.subarray(i, i + size));
    i += size;
  }
  return out;
}

export function fixedChunks(buf: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size));
  return out;
}

/**
 * The named chunkings every decoder fixture goes through: whole, byte by byte, every two-way split (for inputs
 * up to `everySplitUpTo` bytes) and random pieces under several upper bounds.
 */
export function chunkings(buf: Buffer, everySplitUpTo = 2048): Array<[string, Buffer[]]> {
  const out: Array<[string, Buffer[]]> = [
    ['whole', whole(buf)],
    ['byte by byte', byteByByte(buf)],
  ];
  if (buf.length <= everySplitUpTo) {
    for (let at = 1; at < buf.length; at++) out.push([`split at ${at}`, splitAt(buf, at)]);
  }
  for (const max of [2, 7, 64, 1024]) {
    for (let seed = 1; seed <= 5; seed++) out.push([`random ≤${max} seed ${seed}`, randomChunks(buf, rng(seed * 7919 + max), max)]);
  }
  return out;
}
