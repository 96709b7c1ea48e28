// A TCP proxy on 127.0.0.1 that can cut every connection through it at once, to drop HTTP streams mid-way.
import net from 'node:net';

export interface CutProxy {
  port: number;
  /** Where connections go (set once the target listens). */
  target: number;
  /** Destroys every connection open now, both sides; new ones still go through. */
  cut(): void;
  /** While true, a new connection is destroyed as it comes (a link that is down, the target's state kept). */
  refusing: boolean;
  close(): Promise<void>;
}

export async function cutProxy(target = 0): Promise<CutProxy> {
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    if (proxy.refusing) return void client.destroy();
    const upstream = net.connect(proxy.target, '127.0.0.1');
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream).pipe(client);
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: CutProxy = {
    port: (server.address() as net.AddressInfo).port,
    target,
    refusing: false,
    cut: () => {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      pairs.clear();
    },
    close: async () => {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return proxy;
}
