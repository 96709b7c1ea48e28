// Answers the handshake; on tools/call it sends a notification, then half of its answer, and dies.
import { serve, write } from './mini.js';

serve('dies-mid-message', (msg) => {
  if (msg.method !== 'tools/call') return {};
  write({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 50, total: 100 } });
  process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"content":[{"type":"text","text":"cut o`, () => process.exit(1));
  return undefined;
});
