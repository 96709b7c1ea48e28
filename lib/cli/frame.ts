import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { frame, parseFrame } from '../framings/ndjson.js';
import { CliError, EXIT, parseJsonInput, readInput, writeStdout } from './io.js';

interface FrameResult {
  /** Each message as it goes on the wire: compact JSON and one `\n`. */
  frames: string[];
  /** parseFrame of each frame. */
  parsed: unknown[];
}

/**
 * The messages of a fixture: a JSON array of messages, or an object with a `messages` array. A message is a
 * JSON object, or an array (a batch).
 */
export function fixtureMessages(fixture: unknown, name: string): unknown[] {
  const messages = Array.isArray(fixture)
    ? fixture
    : typeof fixture === 'object' && fixture !== null && Array.isArray((fixture as { messages?: unknown }).messages)
      ? (fixture as { messages: unknown[] }).messages
      : undefined;
  if (messages === undefined) {
    throw new CliError(`${name} is not a fixture: expected a JSON array of messages or an object with a "messages" array`);
  }
  messages.forEach((msg, i) => {
    if (typeof msg !== 'object' || msg === null) {
      throw new CliError(`${name}: messages[${i}] is ${msg === null ? 'null' : `a ${typeof msg}`}, not a message (object or batch array)`);
    }
  });
  return messages;
}

export function frameFixture(messages: readonly unknown[]): FrameResult {
  const frames = messages.map((msg) => frame(msg));
  return { frames, parsed: frames.map((f) => parseFrame(f)) };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

export const USAGE = `usage: mcp-frame frame [fixture.json | case-folder | case-name | -]
A case name that is no path is looked up under fixtures/frame/.`;

/** `mcp-frame frame [fixture.json | case-folder | -]` */
export async function frameCommand(args: string[]): Promise<void> {
  if (args.length > 1) throw new CliError(USAGE, EXIT.usage);
  // A case is named by its folder as often as by its file: a folder means its input.json; a bare name that is no
  // path is a case under fixtures/frame/.
  let path = args[0];
  if (path !== undefined && path !== '-' && !(await exists(path)) && /^[\w.-]+$/.test(path)) {
    const known = fileURLToPath(new URL(`../../../fixtures/frame/${path}`, import.meta.url));
    if (await isDirectory(known)) path = known;
  }
  if (path !== undefined && path !== '-' && (await isDirectory(path))) path = join(path, 'input.json');
  const name = path === undefined || path === '-' ? 'fixture on stdin' : `fixture ${path}`;
  const fixture = parseJsonInput(await readInput(path, 'fixture'), name);
  await writeStdout(`${JSON.stringify(frameFixture(fixtureMessages(fixture, name)))}\n`);
}
