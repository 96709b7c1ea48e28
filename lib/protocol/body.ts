/* Reading an HTTP body within a limit: what a client reads of a server's answer and serve of a client's request. */

/**
 * A body read to its end, or until it passes `cap` bytes: then reading stops (the stream is paused, not
 * destroyed, so that a server can still answer on the connection) and `over` is true. Rejects when the body
 * is cut off before its end.
 */
export function readCapped(stream: NodeJS.ReadableStream, cap: number): Promise<{ body: Buffer; over: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: { body: Buffer; over: boolean } | Error): void => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= cap) return void chunks.push(chunk);
      stream.pause();
      settle({ body: Buffer.concat(chunks), over: true });
    };
    stream.on('data', onData);
    stream.once('end', () => settle({ body: Buffer.concat(chunks), over: false }));
    stream.once('error', (err: Error) => settle(err));
    stream.once('close', () => settle(new Error('the body was cut off before its end')));
  });
}
