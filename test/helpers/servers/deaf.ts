// Answers the handshake, then stops reading its stdin until told to by a file appearing, so that what the
// client sends piles up in the pipe. Usage: node deaf.js <flag-file>
import { existsSync } from 'node:fs';
import { serve } from './mini.js';

const flag = process.argv[2] ?? '';
serve('deaf', (msg) => {
  if (msg.method !== 'stop-reading') return {};
  setImmediate(() => {
    process.stdin.pause();
    const poll = setInterval(() => {
      if (!existsSync(flag)) return;
      clearInterval(poll);
      process.stdin.resume();
    }, 20);
  });
  return {};
});
