/** The characters in `text` that must not reach a terminal raw: C0 and C1 controls, DEL, separators and bidi controls. */
export function unprintable(text: string, allow = ''): string[] {
  const found: string[] = [];
  for (const ch of text) {
    if (allow.includes(ch)) continue;
    const c = ch.codePointAt(0)!;
    const control = c < 0x20 || (c >= 0x7f && c <= 0x9f);
    const layout =
      c === 0x2028 || c === 0x2029 || c === 0x061c || c === 0x200e || c === 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
    if (control || layout) found.push(`U+${c.toString(16).padStart(4, '0')}`);
  }
  return found;
}
