/** The inputs every decoder and encoder is measured on. Deterministic: the same bytes on every run. */
import { rng } from '../test/helpers/chunkers.js';

const WORDS = ['read', 'the', 'file', 'größe', 'naïve', 'café', '東京', 'データ', 'значение', 'résumé', '😀', 'ok', 'search', 'λ'];

/** A mix of realistic small MCP messages: tools/call requests, text results with non-ASCII text, progress. */
export function smallMessages(count: number, seed = 1): object[] {
  const random = rng(seed);
  const text = (n: number): string => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
  const out: object[] = [];
  for (let i = 0; i < count; i++) {
    const kind = i % 3;
    if (kind === 0) {
      out.push({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: {
          name: 'search_files',
          arguments: { query: text(4), path: `/srv/project/src/module-${i % 97}`, limit: 20 },
          _meta: { progressToken: `p-${i}` },
        },
      });
    } else if (kind === 1) {
      out.push({
        jsonrpc: '2.0',
        id: i - 1,
        result: { content: [{ type: 'text', text: text(10 + Math.floor(random() * 120)) }], isError: false },
      });
    } else {
      out.push({
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: `p-${i - 2}`, progress: i % 100, total: 100, message: text(3) },
      });
    }
  }
  return out;
}

/** A tools/call result carrying a base64 image, whose frame (without its LF) is exactly `bytes` long. */
export function imageResult(bytes: number, id = 1): object {
  const shell = { jsonrpc: '2.0', id, result: { content: [{ type: 'image', mimeType: 'image/png', data: '' }] } };
  const overhead = Buffer.byteLength(JSON.stringify(shell));
  const data = Buffer.alloc(Math.ceil(((bytes - overhead) * 3) / 4) + 3, 0x5a)
    .toString('base64')
    .slice(0, bytes - overhead);
  shell.result.content[0]!.data = data;
  return shell;
}

/**
 * A result of `bytes` or a little more made of small objects (a long listing): no long string literal, so that
 * FrameDecoder decodes its text and parses it as a whole, the way other large messages take.
 */
export function listingResult(bytes: number, id = 1): object {
  const items: object[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const item = {
      name: `src/module-${i % 97}/file-${i}.ts`,
      size: (i * 7919) % 100_000,
      kind: i % 5 === 0 ? 'directory' : 'file',
      tags: ['tracked', `owner-${i % 13}`],
    };
    size += Buffer.byteLength(JSON.stringify(item)) + 1;
    items.push(item);
  }
  return { jsonrpc: '2.0', id, result: { items } };
}

export function ndjsonBytes(messages: readonly object[]): Buffer {
  return Buffer.from(messages.map((m) => `${JSON.stringify(m)}\n`).join(''));
}

/** Mostly small messages with a few multi-MiB ones among them. */
export function mixedMessages(): object[] {
  const small = smallMessages(30_000, 2);
  const out: object[] = [];
  small.forEach((m, i) => {
    out.push(m);
    if (i % 7_500 === 3_000) out.push(imageResult((2 + (i % 3)) * 1024 * 1024, 1_000_000 + i));
  });
  return out;
}

export function chunk(buf: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  // Copies, as a pipe delivers them: each chunk its own allocation, none a view of one big input buffer.
  for (let i = 0; i < buf.length; i += size) out.push(Buffer.from(buf.subarray(i, i + size)));
  return out;
}
