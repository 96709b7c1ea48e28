/* What the portable decoders of mcp-frame/web share: an unfinished frame's pieces, joined once it is whole. */

/** Pieces as one array (the one piece itself when there is one). */
export function joined(pieces: readonly Uint8Array[]): Uint8Array {
  if (pieces.length === 1) return pieces[0]!;
  const out = new Uint8Array(pieces.reduce((sum, piece) => sum + piece.length, 0));
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}
