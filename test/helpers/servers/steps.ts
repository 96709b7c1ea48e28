// A stdio server for the serve tests, on mini.ts: `steps` sends n progress notifications (to the request's
// progress token) and n log messages, `ms` apart, then answers; `exit` exits mid-request; `later` answers,
// then sends a log message; `echo` echoes.
import { serve, write } from './mini.js';

type Json = Record<string, unknown>;

serve('steps', (msg) => {
  const params = (msg.params ?? {}) as Json;
  if (msg.method !== 'tools/call') return {};
  const args = (params.arguments ?? {}) as Json;
  if (params.name === 'echo') return { content: [{ type: 'text', text: String(args.text) }] };
  if (params.name === 'exit') process.exit(3);
  if (params.name === 'later') {
    // Answers now, and sends a log message once the request is over.
    setTimeout(() => write({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: String(args.text) } }), 30);
    return { content: [{ type: 'text', text: 'later' }] };
  }
  if (params.name === 'env') return { content: [{ type: 'text', text: String(process.env[String(args.name)]) }] };
  if (params.name === 'steps') {
    const n = Number(args.n ?? 5);
    const token = ((params._meta ?? {}) as Json).progressToken;
    let i = 0;
    const timer = setInterval(
      () => {
        i++;
        if (token !== undefined) write({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: i, total: n } });
        write({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `note ${i}` } });
        if (i < n) return;
        clearInterval(timer);
        write({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: `${n} steps` }] } });
      },
      Number(args.ms ?? 20),
    );
    return undefined;
  }
  return { content: [{ type: 'text', text: 'unknown tool' }] };
});
