// A server that misbehaves on purpose, one way per mode, to check that a host survives it. Written on
// node:readline and JSON alone (mini.ts), not on the code under test. Usage: node hostile.js <mode>
//   deep          answers `deep` with a result nested 16,000 deep (and an object 5,000 deep), then answers `ping`
//   malformed     answers `bad-error` with "error": "boom" and `no-result` with neither result nor error
//   close-stdout  answers the handshake, then closes its stdout on `close` and keeps running
//   secrets       writes secrets and terminal escape codes to stderr, then exits with code 2
//   ping-flood    on `flood`, stops reading its stdin and sends pings as fast as the pipe takes them
//   hang          answers the handshake, never answers `hang`, and stays when its stdin ends
import { serve, write } from './mini.js';

const mode = process.argv[2];
const nested = (depth: number, open: string, close: string): string => `${open.repeat(depth)}1${close.repeat(depth)}`;

if (mode === 'secrets') {
  process.stderr.write('starting with API_KEY=sk-live-0123456789abcdef and password=hunter2\n');
  process.stderr.write('Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.secret-token\n');
  process.stderr.write('\u001b]0;owned title\u0007\u001b[2J\u202eevil reordered text\n');
  process.exit(2);
}

process.stderr.write(`hostile ${mode} pid ${process.pid}\n`);
serve(
  'hostile',
  (msg) => {
    switch (msg.method) {
      case 'deep':
        // Raw lines: JSON.stringify cannot even write these.
        process.stdout.write(`{"jsonrpc":"2.0","method":"notifications/deep","params":{"a":${nested(16000, '[', ']')}}}\n`);
        process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"o":${nested(5000, '{"k":', '}')}}}\n`);
        return undefined;
      case 'bad-error':
        write({ jsonrpc: '2.0', id: msg.id, error: 'boom' });
        return undefined;
      case 'no-result':
        write({ jsonrpc: '2.0', id: msg.id });
        return undefined;
      case 'close':
        write({ jsonrpc: '2.0', id: msg.id, result: {} });
        // Keep running with stdout closed: the host must not wait for answers that cannot come.
        process.stdout.end();
        setInterval(() => undefined, 1000);
        return undefined;
      case 'hang':
        return undefined;
      case 'flood': {
        process.stdin.pause();
        let n = 0;
        const more = (): void => {
          while (process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: `ping-${n++}`, method: 'ping' })}\n`)) {
            if (n % 1000 === 0) return void setImmediate(more);
          }
          process.stdout.once('drain', more);
        };
        more();
        return undefined;
      }
      default:
        return {};
    }
  },
  mode === 'hang' ? { onEnd: () => setInterval(() => undefined, 1000) } : {},
);
