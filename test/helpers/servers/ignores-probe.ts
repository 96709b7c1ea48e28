// A legacy server that drops methods it does not know without a word, the era probe among them.
import { serve } from './mini.js';

serve('ignores-probe', (msg) => (msg.method === 'tools/call' ? { content: [{ type: 'text', text: 'legacy' }] } : undefined), { ignoreProbe: true });
