/*
 * What the gateway's clients see of its upstreams' names: tools and prompts under `<server><separator><name>`
 * (or as they are, per the prefix mode), filtered by globs; the gateway's own list cursors; and which resource
 * template a URI matches.
 */

/** How exposed names are made: always `<server>__<name>`, only where two servers offer one name, or never. */
export type PrefixMode = 'always' | 'conflicts' | 'never';

/**
 * A glob on exposed names as a RegExp: `*` any run of characters, `?` one, everything else literal. Whole-name
 * matches only (`github__*` does not match `xgithub__a`).
 */
export function globPattern(glob: string): RegExp {
  let source = '';
  for (const ch of glob) {
    if (ch === '*') source += '.*';
    else if (ch === '?') source += '.';
    else source += literal(ch);
  }
  return new RegExp(`^${source}$`, 's');
}

/**
 * Pairs of server names whose prefixed names can be one and the same: `a<sep>x` is `b<sep>y` exactly when one of
 * `a<sep>` and `b<sep>` begins the other (`google_` begins `google_drive_`: `google_drive_export` would be
 * google's `drive_export` and google_drive's `export`). A gateway refuses such a configuration at start.
 */
export function prefixClashes(names: readonly string[], separator: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < names.length; i++) {
    for (let j = i + 1; j < names.length; j++) {
      const a = `${names[i]}${separator}`;
      const b = `${names[j]}${separator}`;
      if (a.startsWith(b) || b.startsWith(a)) out.push([names[i]!, names[j]!]);
    }
  }
  return out;
}

/** Which exposed names pass `--allow-*` (any of them, when given) and no `--deny-*`. */
export class NameFilter {
  readonly #allow: RegExp[];
  readonly #deny: RegExp[];
  readonly #globs: { allow: readonly string[]; deny: readonly string[] };

  constructor(allow: readonly string[] = [], deny: readonly string[] = []) {
    this.#allow = allow.map(globPattern);
    this.#deny = deny.map(globPattern);
    this.#globs = { allow, deny };
  }

  /** No glob was given: every name passes. */
  get empty(): boolean {
    return this.#allow.length === 0 && this.#deny.length === 0;
  }

  /** The globs that match none of `names` (the names offered, before any filter), as `allow <glob>` or `deny <glob>`. */
  unmatched(names: readonly string[]): string[] {
    const none = (re: RegExp): boolean => !names.some((name) => re.test(name));
    return [
      ...this.#globs.allow.filter((_, i) => none(this.#allow[i]!)).map((glob) => `allow ${glob}`),
      ...this.#globs.deny.filter((_, i) => none(this.#deny[i]!)).map((glob) => `deny ${glob}`),
    ];
  }

  passes(name: string): boolean {
    if (this.#allow.length > 0 && !this.#allow.some((re) => re.test(name))) return false;
    return !this.#deny.some((re) => re.test(name));
  }
}

/**
 * A position in the gateway's merged list: the upstream (by its index in config order) and that upstream's own
 * cursor, undefined for its first page.
 */
export interface ListPosition {
  upstream: number;
  cursor: string | undefined;
}

const CURSOR_PREFIX = 'mf1.';

/** The gateway's cursor for a position: opaque to clients, the upstream's own cursor inside. */
export function encodeCursor(kind: string, position: ListPosition): string {
  const json = JSON.stringify([kind, position.upstream, position.cursor ?? null]);
  return CURSOR_PREFIX + Buffer.from(json, 'utf8').toString('base64url');
}

/** The position a cursor of the gateway's names, or undefined for one it did not make (or for another list). */
export function decodeCursor(kind: string, cursor: string): ListPosition | undefined {
  if (!cursor.startsWith(CURSOR_PREFIX)) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 3 || parsed[0] !== kind) return undefined;
    const [, upstream, inner] = parsed as [unknown, unknown, unknown];
    if (typeof upstream !== 'number' || !Number.isInteger(upstream) || upstream < 0) return undefined;
    if (inner !== null && typeof inner !== 'string') return undefined;
    return { upstream, cursor: inner ?? undefined };
  } catch {
    return undefined;
  }
}

/**
 * An RFC 6570 URI template as a RegExp that URIs it can expand to match: `{var}` (and the `;`, `?`, `&`, `.`
 * forms) a run without `/`, `{?var}` an optional query, `{+var}` and `{#var}` any run. Close enough to route a read, never to expand.
 */
export function templatePattern(template: string): RegExp {
  let source = '';
  let rest = template;
  while (rest.length > 0) {
    const open = rest.indexOf('{');
    const close = open === -1 ? -1 : rest.indexOf('}', open);
    if (open === -1 || close === -1) {
      source += literal(rest);
      break;
    }
    source += literal(rest.slice(0, open));
    const operator = rest[open + 1];
    if (operator === '+' || operator === '#') source += '.*';
    else if (operator === '/') source += '(?:/[^/?#]*)*';
    else if (operator === '?' || operator === '&') source += '(?:[?&][^#]*)?';
    else source += '[^/?#]*';
    rest = rest.slice(close + 1);
  }
  return new RegExp(`^${source}$`, 's');
}

/** `text` as a RegExp source that matches it literally. */
function literal(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}
