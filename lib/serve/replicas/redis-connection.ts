/*
 * The store's connections to Redis, one kind a topology: one node, the primary a set of Sentinels names (followed
 * through failovers), or a Cluster (its keys in one slot, its channels sharded). Each is a StoreConnection: what the
 * store needs of a client, whatever the topology.
 */
import { createClient, createCluster, createSentinel } from '@redis/client';
import { parseClusterUrl, parseSentinelUrl } from './sentinel-url.js';

/** How long one store command may take before the request that needs it gets 503 (and a connection attempt). */
export const COMMAND_MS = 3000;

/**
 * What the store needs of a connection to Redis: a client of one node, of the primary Sentinel names, or of a
 * Cluster. A command names its first key, which routes it on a Cluster.
 */
export interface StoreConnection {
  readonly isReady: boolean;
  readonly isOpen: boolean;
  /** The command that publishes to a replica's channel: SPUBLISH on a Cluster (only the channel's shard carries it). */
  readonly publish: 'PUBLISH' | 'SPUBLISH';
  connect(): Promise<unknown>;
  sendCommand(key: string, args: string[]): Promise<unknown>;
  subscribe(channel: string, listener: (message: string) => void): Promise<unknown>;
  close(): Promise<unknown>;
  destroy(): unknown;
  on(event: 'error' | 'ready', listener: (err: Error) => void): unknown;
}

/** The options both kinds of connection share: commands fail at once while the store is unreachable. */
const NODE_OPTIONS = {
  // Commands fail at once while the store is unreachable, instead of queueing: a new session gets 503 now.
  disableOfflineQueue: true,
  socket: { connectTimeout: COMMAND_MS, reconnectStrategy: (attempt: number) => Math.min(100 * 2 ** attempt, 2000) },
};

/** What the three kinds of client (a node's, Sentinel's, a Cluster's) have alike. */
interface AnyClient {
  readonly isReady: boolean;
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  close(): Promise<unknown>;
  destroy(): unknown;
  on(event: string, listener: (err: Error) => void): unknown;
}

/** `client` as the store uses it; `ready` is the event that stands for its being ready. */
function connection(client: AnyClient, kind: Pick<StoreConnection, 'publish' | 'sendCommand' | 'subscribe'>, ready = 'ready'): StoreConnection {
  return {
    get isReady() {
      return client.isReady;
    },
    get isOpen() {
      return client.isOpen;
    },
    ...kind,
    connect: () => client.connect(),
    close: () => client.close(),
    destroy: () => client.destroy(),
    on: (event, listener) => client.on(event === 'ready' ? ready : event, listener),
  };
}

/**
 * A connection for `url`: one node (`redis://`, `rediss://`), the primary the Sentinels name
 * (`redis+sentinel://`), found again by the client whenever they promote another (a failover), or a Cluster.
 */
export function connectionFor(url: string): StoreConnection {
  if (/^rediss?\+cluster:\/\//.test(url)) return clusterConnection(url);
  return url.startsWith('redis+sentinel://') ? sentinelConnection(url) : nodeConnection(url);
}

/** One node (`redis://`, `rediss://`), as the URL names it. */
function nodeConnection(url: string): StoreConnection {
  const client = createClient({ url, ...NODE_OPTIONS });
  return connection(client, {
    publish: 'PUBLISH',
    sendCommand: (_key, args) => client.sendCommand(args),
    subscribe: (channel, listener) => client.subscribe(channel, listener),
  });
}

/** The primary the Sentinels name (`redis+sentinel://`), found again whenever they promote another (a failover). */
function sentinelConnection(url: string): StoreConnection {
  const parsed = parseSentinelUrl(url);
  if (typeof parsed === 'string') throw new TypeError(`serve: ${parsed}`);
  const sentinel = createSentinel({
    name: parsed.name,
    sentinelRootNodes: parsed.nodes,
    nodeClientOptions: {
      ...NODE_OPTIONS,
      ...(parsed.username === undefined ? {} : { username: parsed.username }),
      ...(parsed.password === undefined ? {} : { password: parsed.password }),
      ...(parsed.database === undefined ? {} : { database: parsed.database }),
    },
  });
  return connection(sentinel, {
    publish: 'PUBLISH',
    sendCommand: (_key, args) => sentinel.sendCommand(false, args),
    subscribe: (channel, listener) => sentinel.subscribe(channel, listener),
  });
}

/**
 * A Redis Cluster (`redis+cluster://`): the client learns the slots from the nodes given and follows MOVED and a
 * failover's new primaries. The service's keys share one slot (the prefix is a hash tag), and so do its channels,
 * which are sharded (SSUBSCRIBE, SPUBLISH: Redis 7), so a carried request crosses one shard, not every node.
 */
function clusterConnection(url: string): StoreConnection {
  const parsed = parseClusterUrl(url);
  if (typeof parsed === 'string') throw new TypeError(`serve: ${parsed}`);
  const tls = parsed.tls ? { tls: true as const } : {};
  const cluster = createCluster({
    rootNodes: parsed.nodes.map(({ host, port }) => ({ socket: { host, port, ...tls } })),
    defaults: {
      disableOfflineQueue: true,
      socket: { ...NODE_OPTIONS.socket, ...tls },
      ...(parsed.username === undefined ? {} : { username: parsed.username }),
      ...(parsed.password === undefined ? {} : { password: parsed.password }),
    },
  });
  // A Cluster has no 'ready' of its own: each node's connection being ready stands for it.
  return connection(
    cluster,
    {
      publish: 'SPUBLISH',
      sendCommand: (key, args) => cluster.sendCommand(key, false, args),
      subscribe: (channel, listener) => cluster.sSubscribe(channel, listener),
    },
    'node-ready',
  );
}
