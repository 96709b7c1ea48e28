/*
 * The framings registry: every framing the streams know, by name, and the default message limit.
 */
import type { Framing } from './codec.js';
import { contentLengthFraming } from './content-length.js';
import { ndjson } from './ndjson.js';
import { sseFraming } from './sse.js';

export type FramingName = 'ndjson' | 'content-length' | 'sse';

/** Every framing the streams know, by name. */
export const FRAMINGS: Readonly<Record<FramingName, Framing>> = {
  ndjson,
  'content-length': contentLengthFraming,
  sse: sseFraming,
};

/** The names in FRAMINGS, in order. */
export const FRAMING_NAMES = Object.keys(FRAMINGS) as FramingName[];

export function isFramingName(name: string): name is FramingName {
  return Object.hasOwn(FRAMINGS, name);
}

/** The framing called `name` (ndjson when undefined); a TypeError listing the names for anything else. */
export function framingByName(name: string | undefined): Framing {
  const key = name ?? 'ndjson';
  if (!isFramingName(key)) {
    throw new TypeError(`unknown framing ${JSON.stringify(name)}; expected one of: ${FRAMING_NAMES.join(', ')}`);
  }
  return FRAMINGS[key];
}

export { DEFAULT_MAX_DEPTH } from './json.js';

/** The largest message, in bytes, when no maxMessageBytes is given. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
