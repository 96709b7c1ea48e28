// A stdio server for the serve tests, on mini.ts: `steps` sends n progress notifications (to the request's
// progress token) and n log messages, `ms` apart, then answers; `exit` exits mid-request; `later` answers,
// then sends a log message; `echo` echoes; `flood` sends `count` log messages of `size` characters as fast as
// its stdout takes them (saying on stderr how many it has written, every 10), then answers; `pid` answers with its
// process id; `whoami` with the caller serve forwarded in `_meta` (--forward-claims), as JSON.
import { serve, write } from './mini.js';

type Json = Record<string, unknown>;

serve('steps', (msg) => {
  const params = (msg.params ?? {}) as Json;
  if (msg.method !== 'tools/call') return {};
  const args = (params.arguments ?? {}) as Json;
  if (params.name === 'whoami')
    return { content: [{ type: 'text', text: JSON.stringify(((params._meta ?? {}) as Json)['mcp-frame/caller'] ?? null) }] };
  if (params.name === 'pid') return { content: [{ type: 'text', text: String(process.pid) }] };
  if (params.name === 'echo') return { content: [{ type: 'text', text: String(args.text) }] };
  if (params.name === 'exit') process.exit(3);
  if (params.name === 'later') {
    // Answers now, and sends a log message once the request is over.
    setTimeout(() => write({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: String(args.text) } }), 30);
    return { content: [{ type: 'text', text: 'later' }] };
  }
  if (params.name === 'env') return { content: [{ type: 'text', text: String(process.env[String(args.name)]) }] };
  if (params.name === 'flood') {
    const count = Number(args.count ?? 100);
    const data = 'x'.repeat(Number(args.size ?? 1024));
    let i = 0;
    const more = (): void => {
      while (i < count) {
        i++;
        if (i % 10 === 0) process.stderr.write(`flood wrote ${i}\n`);
        const line = `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `${i} ${data}` } })}\n`;
        if (!process.stdout.write(line)) return void process.stdout.once('drain', more);
      }
      write({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: `${count} sent` }] } });
    };
    more();
    return undefined;
  }
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
