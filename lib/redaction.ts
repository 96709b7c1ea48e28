/*
 * Every way a secret is kept out of what this package prints, logs, records or puts in an error, in one place:
 * the secrets this process knows replaced exactly (replaceSecrets, scrubber, configuredSecrets, with the one
 * rule for short values, MIN_SECRET_LENGTH), URLs without their credentials (urlWithoutCredentials), the
 * pattern-based redaction of text a peer sent (redact, redactMessage, isSecretKey), and the short, printable
 * previews built on it (preview, reasonText, safeLine).
 */

/** What a hidden secret becomes. */
const REDACTED = '[REDACTED]';

/**
 * Known secrets shorter than this are not looked for in text a server sends back: they would hide ordinary
 * words. The same rule holds for serve's token, which warns at start about one that short.
 */
export const MIN_SECRET_LENGTH = 6;

/** `text` with each of `secrets` replaced by [REDACTED], the longest first (a value containing another goes whole). */
export function replaceSecrets(text: string, secrets: Iterable<string>): string {
  return replaceLongestFirst(text, longestFirst(secrets));
}

/** A function that replaces each of `secrets` in a text with [REDACTED]; the list is ordered once, here. */
export function scrubber(secrets: string[]): (text: string) => string {
  const sorted = longestFirst(secrets);
  if (sorted.length === 0) return (text) => text;
  return (text) => replaceLongestFirst(text, sorted);
}

function longestFirst(secrets: Iterable<string>): string[] {
  return [...secrets].filter((s) => s !== '').sort((a, b) => b.length - a.length);
}

function replaceLongestFirst(text: string, sorted: string[]): string {
  for (const secret of sorted) if (text.includes(secret)) text = text.split(secret).join(REDACTED);
  return text;
}

/**
 * What was configured for a server that its text must never carry out again (a server may echo a request's
 * headers or URL in an error body): every header value, the credential after a scheme (`Bearer ...`), the URL's
 * query values and password, raw and percent-encoded; values under MIN_SECRET_LENGTH are left.
 */
export function configuredSecrets(url: URL, headers: Record<string, string>): string[] {
  const found = new Set<string>();
  const add = (value: string): void => {
    if (value.length < MIN_SECRET_LENGTH) return;
    found.add(value);
    found.add(encodeURIComponent(value));
  };
  for (const value of Object.values(headers)) {
    add(value.trim());
    const credential = /^[A-Za-z-]+\s+(\S.*)$/.exec(value.trim());
    if (credential !== null) add(credential[1]!);
  }
  for (const [, value] of url.searchParams) add(value);
  if (url.password !== '') add(decodeURIComponent(url.password));
  // The longest first, so that a value containing another is replaced whole.
  return [...found].sort((a, b) => b.length - a.length);
}

/** `scheme://user:secret@host/path` as `scheme://host/path` (no trailing slash); undefined for no URL. */
export function urlWithoutCredentials(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return undefined;
  }
}

export const PREVIEW_CHARS = 80;
/**
 * How much of a frame the preview looks at. Redaction runs before the cut, on this much, so a secret that
 * starts inside the first 80 characters is hidden even when its value runs past them.
 */
const PREVIEW_SCAN_BYTES = 4096;

/** Words that make a key's value secret: authorization, tokens, passwords, API and private keys, cookies. */
const SECRET_WORD = '(?:auth|token|passw(?:or)?d|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key|cookie|credential|signature)';
/** A JSON (or single-quoted) member whose key looks secret; the value is a string (possibly cut off) or a bare scalar. */
const SECRET_MEMBER = new RegExp(
  String.raw`((["'])[^"'\\]*${SECRET_WORD}[^"'\\]*\2\s*:\s*)(?:"(?:[^"\\]|\\.)*(?:"|\\?$)|'(?:[^'\\]|\\.)*(?:'|\\?$)|[^\s,}\]]+)`,
  'gi',
);
/** `password=... token=...`, `?api_key=...&`, `API_KEY=...` in an environment dump. */
const SECRET_ASSIGNMENT = new RegExp(String.raw`([\w.-]*${SECRET_WORD}[\w.-]*=)[^\s&,;'"]+`, 'gi');
/** `api_key: value`, as YAML or a log line writes it (a value after "Bearer " is left to BEARER). */
const SECRET_FIELD = new RegExp(String.raw`(^|[\s{,])([\w.-]*${SECRET_WORD}[\w.-]*\s*:\s+)(?!(?:bearer|basic)\s)(?!\[REDACTED\])[^\s,}]+`, 'gim');
const BEARER = /\b(bearer|basic)\s+([A-Za-z0-9._~+/=-]+)/gi;
/** A word after "bearer" or "basic" that is prose, not a credential: lower-case letters only ("bearer token", "basic auth"). */
const PROSE_WORD = /^[a-z]+$/;
const AUTHORIZATION_BEFORE = /authorization["']?\s*[:=]\s*["']?$/i;
/** The password in `scheme://user:password@host`. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@]*:)[^\s/@]+@/gi;
/** Tokens whose form gives them away wherever they stand. */
const KNOWN_TOKEN =
  /\b(?:sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})/g;
/** `\u0074oken`: a JSON escape of a plain letter, digit, `_` or `-`, which a key may use to hide from the patterns. */
const ESCAPED_PLAIN = /\\u00(2[dD]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF])/g;

/** Words that make a key secret wherever they stand in it (`clientSecret`, `x-api-key`, `oauth_code`). */
const SECRET_KEY_WORDS = new Set([
  'auth',
  'oauth',
  'authorization',
  'password',
  'passwd',
  'passphrase',
  'pwd',
  'secret',
  'secrets',
  'cookie',
  'cookies',
  'credential',
  'credentials',
  'signature',
  'apikey',
  'accesskey',
  'privatekey',
  'bearer',
  'jwt',
]);
/** Two words that together make a key secret (`api_key`, `privateKey`). */
const SECRET_KEY_PAIRS = new Set(['api key', 'access key', 'private key', 'secret key', 'session key']);
/** The words before `token` that make it a credential; `progressToken`, `maxTokens` and `nextToken` are not. */
const TOKEN_QUALIFIERS = new Set([
  'access',
  'refresh',
  'id',
  'auth',
  'oauth',
  'api',
  'bearer',
  'session',
  'csrf',
  'xsrf',
  'jwt',
  'github',
  'personal',
  'security',
  'client',
  'registration',
]);
const GLUED_TOKEN = /(?:access|refresh|auth|api|bearer|session|csrf|xsrf)tokens?$/;

/**
 * Whether a key names a secret: a credential word in it, or `token` alone or after a word that makes it one
 * (`access_token`, `idToken`), never a key where `token` counts or ids something (`maxTokens`, `progressToken`).
 */
export function isSecretKey(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const before = i > 0 ? words[i - 1]! : undefined;
    if (SECRET_KEY_WORDS.has(word) || GLUED_TOKEN.test(word)) return true;
    if (before !== undefined && SECRET_KEY_PAIRS.has(`${before} ${word}`)) return true;
    if ((word === 'token' || word === 'tokens') && (words.length === 1 || (before !== undefined && TOKEN_QUALIFIERS.has(before)))) return true;
  }
  return false;
}

/**
 * Hides secrets in text from a peer or a config before it is shown: the values of keys that look secret (in
 * JSON, single-quoted dicts, `key=value` and `key: value` text, keys spelled with `\u` escapes), bearer and
 * basic credentials, URL passwords, and tokens of well-known forms.
 */
export function redact(text: string): string {
  return text
    .replace(ESCAPED_PLAIN, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
    .replace(BEARER, (match, scheme: string, value: string, at: number, whole: string) =>
      // After an Authorization key it is a credential whatever it looks like; elsewhere a lower-case word is prose.
      PROSE_WORD.test(value) && !AUTHORIZATION_BEFORE.test(whole.slice(Math.max(0, at - 40), at)) ? match : `${scheme} [REDACTED]`,
    )
    .replace(SECRET_MEMBER, (match, key: string, quote: string) =>
      isSecretKey(key.slice(1, key.indexOf(quote, 1))) ? `${key}${quote}[REDACTED]${quote}` : match,
    )
    .replace(SECRET_ASSIGNMENT, (match, key: string) => (isSecretKey(key.slice(0, -1)) ? `${key}[REDACTED]` : match))
    .replace(SECRET_FIELD, (match, lead: string, key: string) => (isSecretKey(key.slice(0, key.indexOf(':'))) ? `${lead}${key}[REDACTED]` : match))
    .replace(URL_PASSWORD, '$1[REDACTED]@')
    .replace(KNOWN_TOKEN, '[REDACTED]');
}

/**
 * Characters that must not reach a terminal raw: C0 and C1 controls (escape sequences retitle the terminal or
 * clear the screen), DEL, line and paragraph separators, and the bidirectional controls that reorder text.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Text from a peer made safe to print: every unprintable character escaped as `\n`, `\t` or `\uXXXX`. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escapeControl);
}

/**
 * JSON text made safe for a terminal and still the same JSON: JSON.stringify escapes C0 controls already, and
 * DEL, C1 controls, line separators and bidirectional controls inside strings become `\uXXXX` escapes too.
 */
export function printableJson(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'null').replace(
    /[\u007f-\u009f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
    escapeControl,
  );
}

/** A line from a peer (a server's stderr, say) as it may be shown: redacted, then made printable. */
export function safeLine(text: string): string {
  return printable(redact(text));
}

/**
 * A short, printable, redacted preview of some input: control characters escaped, at most PREVIEW_CHARS
 * characters, with an ellipsis when cut.
 */
/** Bytes as text for a preview, bad sequences replaced (U+FFFD): on any runtime, not Node's alone. */
const PREVIEW_DECODER = new TextDecoder();

export function preview(input: string | Uint8Array): string {
  let text: string;
  let cut = false;
  if (typeof input === 'string') {
    cut = input.length > PREVIEW_SCAN_BYTES;
    text = cut ? input.slice(0, PREVIEW_SCAN_BYTES) : input;
  } else {
    cut = input.length > PREVIEW_SCAN_BYTES;
    text = PREVIEW_DECODER.decode(input.subarray(0, PREVIEW_SCAN_BYTES));
  }
  text = printable(redact(text.trim()));
  if (text.length > PREVIEW_CHARS) {
    text = text.slice(0, PREVIEW_CHARS);
    cut = true;
  }
  return cut ? `${text}…` : text;
}

/** The longest reason quoted from a server's error body. */
export const REASON_CHARS = 300;

/**
 * A server's error body as the reason in a message: the `error_description`, `message` or `error` of a JSON body
 * (nested under `error` too) when it has one, else the text; redacted, made printable, spaces collapsed, and cut
 * at a word boundary past REASON_CHARS, never mid-word.
 */
export function reasonText(body: string): string {
  let text = body.trim();
  try {
    const value: unknown = JSON.parse(text);
    const pick = (v: unknown): string | undefined => {
      if (typeof v !== 'object' || v === null) return undefined;
      const o = v as Record<string, unknown>;
      for (const key of ['error_description', 'message', 'error', 'detail', 'title']) {
        if (typeof o[key] === 'string' && o[key] !== '') return o[key] as string;
      }
      return pick(o.error);
    };
    text = pick(value) ?? text;
  } catch {
    // Not JSON: the text as it is.
  }
  text = printable(redact(text.slice(0, REASON_CHARS * 4)))
    .replace(/\s+/g, ' ')
    .trim();
  if (text.length <= REASON_CHARS) return text;
  const cut = text.lastIndexOf(' ', REASON_CHARS);
  return `${text.slice(0, cut > REASON_CHARS / 2 ? cut : REASON_CHARS)}…`;
}

function escapeControl(ch: string): string {
  switch (ch) {
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
    default:
      return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  }
}

/**
 * A copy of a parsed message with its secrets hidden, for what keeps messages (cassettes): the value of every
 * member whose key names a secret (isSecretKey) becomes "[REDACTED]", and every string goes through redact(). Decoded
 * messages nest at most maxDepth levels, so the walk is bounded; deeper data is cut off as "[TOO DEEP]".
 */
export function redactMessage(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redact(value);
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= 1000) return '[TOO DEEP]';
  if (Array.isArray(value)) return value.map((v) => redactMessage(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const clean = isSecretKey(key) && v !== null && typeof v !== 'object' ? '[REDACTED]' : redactMessage(v, depth + 1);
    Object.defineProperty(out, key, { value: clean, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
