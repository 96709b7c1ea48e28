// Ignores both the end of stdin and SIGTERM: only SIGKILL ends it. Usage: node stubborn.js [spawn-child]
// With "spawn-child" it also starts a stubborn grandchild, as wrappers such as npx do, and reports its pid.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serve } from './mini.js';

process.on('SIGTERM', () => process.stderr.write('stubborn: ignoring SIGTERM\n'));
setInterval(() => undefined, 1000);
if (process.argv[2] === 'spawn-child') {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], { stdio: ['pipe', 'ignore', 'inherit'] });
  process.stderr.write(`grandchild pid ${child.pid}\n`);
}
serve('stubborn', () => ({}), { onEnd: () => process.stderr.write('stubborn: stdin closed, staying\n') });
