// Temporary folders for tests, removed when the test process exits, whatever the tests did with them, and when it
// is ended by SIGTERM or SIGHUP (a timeout's kill, a closed terminal) while its event loop still turns.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

function removeAll(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A new folder `mcp-frame-<prefix>-XXXXXX` in the system temp directory, removed at exit. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `mcp-frame-${prefix}-`));
  if (made.length === 0) {
    process.once('exit', removeAll);
    for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
      // The listener is gone once called, so raising the signal again ends the process as it would have.
      process.once(signal, () => {
        removeAll();
        process.kill(process.pid, signal);
      });
    }
  }
  made.push(dir);
  return dir;
}
