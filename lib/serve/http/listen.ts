/* Listening on HTTP, and counting the body bytes each response writes (for --metrics). */
import * as http from 'node:http';
import type * as net from 'node:net';
import type { Telemetry } from '../observe/index.js';

/** Listens on `host`:`port` (0: a free one); resolves with the port. */
export async function listenHttp(server: http.Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as net.AddressInfo).port;
}

/** The bytes of a chunk written to a response (a callback or nothing counts none). */
function chunkBytes(chunk: unknown): number {
  if (typeof chunk === 'string') return Buffer.byteLength(chunk);
  return chunk instanceof Uint8Array ? chunk.length : 0;
}

/**
 * The ServerResponse class of an http.Server whose responses publish the body bytes they write (`http:bytes`;
 * headers are not counted), given to http.createServer({ ServerResponse }): responses are made counting, nothing
 * is changed on one already made.
 */
export function countingResponse(telemetry: Telemetry): typeof http.ServerResponse {
  return class CountingResponse<Request extends http.IncomingMessage = http.IncomingMessage> extends http.ServerResponse<Request> {
    override write(chunk: unknown, ...rest: unknown[]): boolean {
      const bytes = chunkBytes(chunk);
      if (bytes > 0) telemetry.publish('http:bytes', { direction: 'out', bytes });
      return (super.write as (...args: unknown[]) => boolean)(chunk, ...rest);
    }

    override end(...args: unknown[]): this {
      const bytes = chunkBytes(args[0]);
      if (bytes > 0) telemetry.publish('http:bytes', { direction: 'out', bytes });
      return (super.end as (...a: unknown[]) => this)(...args);
    }
  };
}
