import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DecodeEvent } from './decode.js';
import { tempDir } from './temp.js';

// The command line keeps sign-in tokens in the user's config folder by default: never a test run's tokens.
process.env.MCP_FRAME_AUTH_DIR ??= tempDir('auth-home');

/** The repository root, found from the compiled test file's place (dist/test/helpers). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface WireFixture {
  name: string;
  bytes: Buffer;
  /** What a decoder in skip mode reports, in order. */
  events: DecodeEvent[];
}

/** fixtures/wire/<name>.<framing> with its <name>.expected.json beside it. */
export function wireFixtures(framing: string): WireFixture[] {
  const dir = `${ROOT}fixtures/wire/`;
  return readdirSync(dir)
    .filter((f) => f.endsWith(`.${framing}`))
    .sort()
    .map((file) => {
      const name = file.slice(0, -framing.length - 1);
      const expected = JSON.parse(readFileSync(`${dir}${name}.expected.json`, 'utf8')) as { events: DecodeEvent[] };
      return { name, bytes: readFileSync(`${dir}${file}`), events: expected.events };
    });
}

/** The events a decoder in error mode reports: everything up to and including the first bad frame. */
export function untilFirstInvalid(events: DecodeEvent[]): { before: DecodeEvent[]; first: DecodeEvent | undefined } {
  const i = events.findIndex((e) => 'invalid' in e);
  return i === -1 ? { before: events, first: undefined } : { before: events.slice(0, i), first: events[i] };
}

export interface FrameCase {
  name: string;
  inputPath: string;
  input: unknown;
  expected: { frames: string[]; parsed: unknown[] };
}

/** fixtures/frame/<case>/{input,expected}.json: the frame command's cases. */
export function frameCases(): FrameCase[] {
  const dir = `${ROOT}fixtures/frame/`;
  return readdirSync(dir)
    .sort()
    .map((name) => ({
      name,
      inputPath: `${dir}${name}/input.json`,
      input: JSON.parse(readFileSync(`${dir}${name}/input.json`, 'utf8')) as unknown,
      expected: JSON.parse(readFileSync(`${dir}${name}/expected.json`, 'utf8')) as { frames: string[]; parsed: unknown[] },
    }));
}
