/*
 * The replicas room: what serve --store shares between replicas (the ReplicaStore interface, the tunnel that carries
 * a request to the replica owning its session, forwarding straight to a replica's advertised address). The Redis
 * implementation (redis-store.ts) is not re-exported here: it is loaded only for --store, by a dynamic import.
 */
export { forwardDirect, isPeerKey, PEER_HEADER, PEER_REFUSED_HEADER } from './peer.js';
export { parseClusterUrl, parseSentinelUrl } from './sentinel-url.js';
export {
  carriedCaller,
  incomingOf,
  MayHaveRun,
  type ReplicaStore,
  StoreUnavailable,
  type TunnelFrame,
  type TunnelRequest,
  TunnelResponse,
  tunnelRequest,
} from './store.js';
