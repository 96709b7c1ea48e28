// Reads all of stdin without this package's decoder, checks that it is exactly the numbered messages, each
// framed as JSON.stringify + "\n", and prints a JSON report. Usage: node line-checker.js <delay-ms>
import { numberedMessage } from './messages.js';

const delay = Number(process.argv[2] ?? 0);
await new Promise((resolve) => setTimeout(resolve, delay));
const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const lines = Buffer.concat(chunks).toString('utf8').split('\n');
const last = lines.pop();
let firstMismatch: number | undefined;
for (let i = 0; i < lines.length; i++) {
  if (lines[i] !== JSON.stringify(numberedMessage(i))) {
    firstMismatch = i;
    break;
  }
}
process.stdout.write(`${JSON.stringify({ lines: lines.length, trailing: last, firstMismatch: firstMismatch ?? null, reads: chunks.length })}\n`);
