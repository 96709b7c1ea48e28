// Prints a banner on stdout before its first message and a log line among its answers, as real servers do.
import { serve, write } from './mini.js';

process.stdout.write(`Booting banner-server v1.0 (pid ${process.pid})...\n`);
serve(
  'banner',
  (msg) => {
    if (msg.method === 'tools/list') {
      process.stdout.write('[info] listing tools\n');
      return { tools: [{ name: 'hello', description: 'Says hello.\nSecond line.', inputSchema: { type: 'object' } }] };
    }
    if (msg.method === 'tools/call') {
      write({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'calling hello' } });
      return { content: [{ type: 'text', text: 'hello' }] };
    }
    if (msg.method === 'ask-client') {
      // Sends a request of its own to the client, then answers with what came back.
      write({ jsonrpc: '2.0', id: 'srv-1', method: 'sampling/createMessage', params: { x: 1 } });
      write({ jsonrpc: '2.0', id: 'srv-2', method: 'ping' });
      write({ jsonrpc: '2.0', id: 'srv-3', method: 'roots/list' });
      return { asked: true };
    }
    if (msg.method === 'env') return { env: process.env };
    if (msg.method === 'slow') return undefined; // never answered
    write({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `Method not found: ${String(msg.method)}`, data: { method: msg.method } } });
    return undefined;
  },
  {
    // Reports what the client sent that was not a request: its cancellations and its answers to our requests.
    onOther: (msg) => write({ jsonrpc: '2.0', method: 'test/received', params: msg }),
  },
);
