// Temporary folders for tests, removed when the test process exits, whatever the tests did with them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

/** A new folder `mcp-frame-<prefix>-XXXXXX` in the system temp directory, removed at exit. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `mcp-frame-${prefix}-`));
  if (made.length === 0) {
    process.once('exit', () => {
      for (const d of made) rmSync(d, { recursive: true, force: true });
    });
  }
  made.push(dir);
  return dir;
}
