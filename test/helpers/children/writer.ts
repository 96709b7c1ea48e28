// Writes `count` numbered messages to stdout in irregular pieces, pausing now and then so that the pipe
// delivers them in many reads. Usage: node writer.js <count> <seed>
import { once } from 'node:events';
import { rng } from '../chunkers.js';
import { numberedMessage } from './messages.js';

const count = Number(process.argv[2] ?? 1000);
const random = rng(Number(process.argv[3] ?? 1));
let text = '';
for (let i = 0; i < count; i++) text += `${JSON.stringify(numberedMessage(i))}\n`;
const bytes = Buffer.from(text);

let at = 0;
while (at < bytes.length) {
  const size = 1 + Math.floor(random() * (random() < 0.2 ? 9 : 9000));
  const piece = bytes.subarray(at, at + size);
  at += size;
  if (!process.stdout.write(piece)) await once(process.stdout, 'drain');
  if (random() < 0.05) await new Promise((resolve) => setTimeout(resolve, 1));
}
