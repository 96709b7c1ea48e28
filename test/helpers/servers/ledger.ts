// A legacy server whose one tool, `note`, appends its argument `n` to the file LEDGER names before it answers
// `noted <n>`: what ran, for a test to set against what each client heard.
import { appendFileSync } from 'node:fs';
import { serve } from './mini.js';

type Json = Record<string, unknown>;
const ledger = process.env.LEDGER;
if (ledger === undefined) throw new Error('ledger.ts needs LEDGER, the file to append to');

serve('ledger', (msg) => {
  if (msg.method === 'tools/list') {
    return { tools: [{ name: 'note', inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } }] };
  }
  if (msg.method !== 'tools/call') return {};
  const n = ((msg.params as Json).arguments as Json).n;
  appendFileSync(ledger, `${n}\n`);
  return { content: [{ type: 'text', text: `noted ${n}` }] };
});
