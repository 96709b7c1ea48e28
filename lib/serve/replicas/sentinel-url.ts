/*
 * The store URLs that name several nodes, in the form other Redis clients take (WHATWG URL does not parse a list
 * of hosts, so they are read here):
 *   `redis+sentinel://[user:password@]host1:port1,host2:port2/<master name>[/<db>]`: the Sentinels to ask for the
 *     primary of a Redis set. The password is the data nodes' (Sentinels are asked without one).
 *   `redis+cluster://[user:password@]host1:port1[,host2:port2...]`: some nodes of a Redis Cluster (the client
 *     finds the rest); `rediss+cluster://` for TLS.
 */
interface Nodes {
  nodes: Array<{ host: string; port: number }>;
  username: string | undefined;
  password: string | undefined;
}

interface SentinelStore extends Nodes {
  name: string;
  database: number | undefined;
}

/** `host:port,host:port` and the credentials before them, or a string that says what is wrong. */
function nodesOf(credentials: string | undefined, hosts: string, what: string, port: number): Nodes | string {
  const nodes: Nodes['nodes'] = [];
  for (const part of hosts.split(',')) {
    const node = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(part);
    if (node === null) return `a ${what} address is host:port, got ${JSON.stringify(part.slice(0, 40))}`;
    nodes.push({ host: node[1]!.replace(/^\[|\]$/g, ''), port: Number(node[2] ?? port) });
  }
  const [user, pass] = credentials === undefined ? [undefined, undefined] : credentials.split(':', 2);
  return {
    nodes,
    username: user === undefined || user === '' ? undefined : decodeURIComponent(user),
    password: pass === undefined || pass === '' ? undefined : decodeURIComponent(pass),
  };
}

/** The parts of a `redis+sentinel://` URL, or a string that says what is wrong with it. */
export function parseSentinelUrl(url: string): SentinelStore | string {
  const m = /^redis\+sentinel:\/\/(?:([^@/]*)@)?([^/]+)\/([^/?#]+)(?:\/(\d+))?\/?$/.exec(url);
  if (m === null) return 'a Sentinel store is redis+sentinel://host:port[,host:port...]/<master name>[/<db>]';
  const nodes = nodesOf(m[1], m[2]!, 'Sentinel', 26379);
  if (typeof nodes === 'string') return nodes;
  return { ...nodes, name: decodeURIComponent(m[3]!), database: m[4] === undefined ? undefined : Number(m[4]) };
}

/** The parts of a `redis+cluster://` URL (tls when `rediss+cluster://`), or a string that says what is wrong with it. */
export function parseClusterUrl(url: string): (Nodes & { tls: boolean }) | string {
  const m = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/.exec(url);
  if (m === null) return 'a Cluster store is redis+cluster://host:port[,host:port...] (rediss+cluster:// for TLS), no database';
  const nodes = nodesOf(m[2], m[3]!, 'Cluster node', 6379);
  if (typeof nodes === 'string') return nodes;
  return { ...nodes, tls: m[1] === 'rediss' };
}
