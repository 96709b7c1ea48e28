/*
 * `redis+sentinel://[user:password@]host1:port1,host2:port2/<master name>[/<db>]`: the Sentinels to ask for the
 * primary of a Redis set, the form of the URL other Redis clients take (WHATWG URL does not parse a list of
 * hosts, so it is read here). The password is the data nodes' (Sentinels are asked without one).
 */
interface SentinelStore {
  nodes: Array<{ host: string; port: number }>;
  name: string;
  database: number | undefined;
  username: string | undefined;
  password: string | undefined;
}

/** The parts of a `redis+sentinel://` URL, or a string that says what is wrong with it. */
export function parseSentinelUrl(url: string): SentinelStore | string {
  const m = /^redis\+sentinel:\/\/(?:([^@/]*)@)?([^/]+)\/([^/?#]+)(?:\/(\d+))?\/?$/.exec(url);
  if (m === null) return 'a Sentinel store is redis+sentinel://host:port[,host:port...]/<master name>[/<db>]';
  const nodes: SentinelStore['nodes'] = [];
  for (const part of m[2]!.split(',')) {
    const node = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(part);
    if (node === null) return `a Sentinel address is host:port, got ${JSON.stringify(part.slice(0, 40))}`;
    nodes.push({ host: node[1]!.replace(/^\[|\]$/g, ''), port: Number(node[2] ?? 26379) });
  }
  const [user, pass] = m[1] === undefined ? [undefined, undefined] : m[1].split(':', 2);
  return {
    nodes,
    name: decodeURIComponent(m[3]!),
    database: m[4] === undefined ? undefined : Number(m[4]),
    username: user === undefined || user === '' ? undefined : decodeURIComponent(user),
    password: pass === undefined || pass === '' ? undefined : decodeURIComponent(pass),
  };
}
