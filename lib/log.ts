/*
 * A leveled logger with fields, in pino's shape without pino: the level is the call (`log.warn`), the event a name
 * (`upstream.down`), the text a sentence for people, and the fields what a machine reads (`{ upstream, why }`).
 * Child loggers carry their bindings (a session, a server) into every line. In text form a line is the sentence
 * (after the child's prefix); in JSON form it is one object: `time`, `level`, `event`, the bindings, the fields,
 * and `msg`. Every line passes one scrubber first: the secrets given are replaced and a whole session id is cut
 * to its first characters, whatever text (a client's request line, a server's stderr) carried them.
 *
 * Why not pino: serve writes a few lines a second at most (a line per request only at debug), to stderr, in the
 * same process; what this needs is the shape (levels, events, fields, children), which is 100 lines, not a
 * dependency with its own worker thread and transports.
 */
import { debug } from './debug.js';
import { MIN_SECRET_LENGTH, scrubber } from './redaction.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** The levels from least to most severe. */
const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** What a line says for machines: each a JSON value. */
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(event: string, msg: string, fields?: LogFields): void;
  info(event: string, msg: string, fields?: LogFields): void;
  warn(event: string, msg: string, fields?: LogFields): void;
  error(event: string, msg: string, fields?: LogFields): void;
  /** Whether a line of `level` would be written (to skip building one that would not). */
  enabled(level: LogLevel): boolean;
  /**
   * A logger whose lines carry `bindings` too, and whose text lines start with `prefix` (`session 1a2b3c4d`):
   * what a session or a server logs is told apart without each call naming it.
   */
  child(bindings: LogFields, prefix?: string): Logger;
}

export interface LoggerOptions {
  /** Where each line goes (without its newline). */
  write(line: string): void;
  /** @defaultValue 'text' */
  format?: 'text' | 'json';
  /** The least level written. @defaultValue 'info' */
  level?: LogLevel;
  /** Text lines start with the time (ISO 8601, UTC). JSON lines always have it. @defaultValue false */
  time?: boolean;
  /** Replaced with [REDACTED] in every line and string field (each at least MIN_SECRET_LENGTH long; shorter ones are not looked for). */
  secrets?: readonly string[];
  /** NODE_DEBUG=mcp-frame lines start with this. @defaultValue 'mcp-frame' */
  debugName?: string;
}

/** A whole session id (a UUID): only its first characters are kept. */
const SESSION_ID = /\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;

/** The logger writing to `options.write`. */
export function createLogger(options: LoggerOptions): Logger {
  const scrubSecrets = scrubber((options.secrets ?? []).filter((s) => s.length >= MIN_SECRET_LENGTH));
  const scrub = (text: string): string => scrubSecrets(text.replace(SESSION_ID, '$1…'));
  const least = LOG_LEVELS.indexOf(options.level ?? 'info');
  const json = options.format === 'json';
  const debugName = options.debugName ?? 'mcp-frame';
  const make = (bindings: LogFields, prefix: string): Logger => {
    const line = (level: LogLevel, event: string, msg: string, fields: LogFields | undefined): void => {
      if (LOG_LEVELS.indexOf(level) < least) return;
      const text = scrub(prefix === '' ? msg : `${prefix} ${msg}`);
      debug(`${debugName}: ${text}`);
      if (!json) return options.write(options.time === true ? `${new Date().toISOString()} ${text}` : text);
      const record: LogFields = { time: new Date().toISOString(), level, event };
      for (const source of [bindings, fields ?? {}])
        for (const [key, value] of Object.entries(source)) if (value !== undefined) record[key] = scrubValue(value, scrub);
      record.msg = text;
      options.write(JSON.stringify(record));
    };
    return {
      debug: (event, msg, fields) => line('debug', event, msg, fields),
      info: (event, msg, fields) => line('info', event, msg, fields),
      warn: (event, msg, fields) => line('warn', event, msg, fields),
      error: (event, msg, fields) => line('error', event, msg, fields),
      enabled: (level) => LOG_LEVELS.indexOf(level) >= least,
      child: (more, childPrefix) =>
        make(
          { ...bindings, ...more },
          childPrefix === undefined || childPrefix === '' ? prefix : prefix === '' ? childPrefix : `${prefix} ${childPrefix}`,
        ),
    };
  };
  return make({}, '');
}

/** A field's value with secrets and session ids scrubbed from its strings (arrays and objects walked). */
function scrubValue(value: unknown, scrub: (text: string) => string): unknown {
  if (typeof value === 'string') return scrub(value);
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, scrub));
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubValue(v, scrub)]));
  return value;
}

/** A logger of a plain line writer (a library user's `log(line)`): text lines, every level. */
export function lineLogger(write: (line: string) => void): Logger {
  return createLogger({ write, level: 'debug' });
}
