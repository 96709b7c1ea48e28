/*
 * The replicas' store on Redis (loaded only for `serve --store redis://...`). Keys, under a prefix in braces (a
 * hash tag: `{mcp-frame}`, so that on a Redis Cluster every key of a service is in one slot and its scripts run
 * on one node):
 *   <p>:replicas           set of replica ids that have registered
 *   <p>:alive:<replica>    exists while the replica beats (a short time to live, renewed every second); its
 *                          value is the replica's advertised address (--advertise-url), or 1
 *   <p>:peer-key           the key replicas prove themselves with when they forward a request over HTTP
 *   <p>:owned:<replica>    set of the session ids the replica owns
 *   <p>:session:<id>       the id of the replica that owns session <id>
 * A replica that stops beating has its keys removed by the next replica that counts or looks up sessions, so
 * a dead replica's sessions are 404 everywhere within ALIVE_MS. Each replica subscribes to <p>:to:<replica>:
 * requests for its sessions come in there, and answers to the requests it carried out.
 */
import { CODES } from '../../protocol/codes.js';
import { rpcError } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { safeLine } from '../../errors.js';
import { whenGone } from '../../protocol/response.js';
import { MayHaveRun, type ReplicaStore, StoreUnavailable, type TunnelFrame, type TunnelRequest, type TunnelResponse } from './store.js';
import { urlWithoutCredentials } from '../../redaction.js';
import { forwardDirect } from './peer.js';
import { COMMAND_MS, connectionFor, type StoreConnection } from './redis-connection.js';
import { answerLost, type Carried, CarriedHere, type Envelope, PIECE_CHARS, pieces, writeAnswer } from './redis-tunnel.js';

/** Commands that always write (not EVAL: a script that only reads runs on a replica): one that succeeds says the store takes writes again. */
const WRITES = new Set(['SET', 'SADD', 'DEL', 'SREM']);

/** How long a replica counts as alive after its last beat. A replica killed outright is gone after this. */
export const ALIVE_MS = 5000;
const BEAT_MS = 1000;
/** How often a replica with requests out at other replicas checks that those are still alive. */
const WATCH_MS = 1000;
/** How long requests for a replica whose advertised address could not be reached go through Redis instead. */
const UNREACHABLE_MS = 30_000;
/** Checks in a row that find an owner without its liveness key before its carried requests are ended. */
const OWNER_MISSES = 2;
/** Session owners remembered by the replica that carries requests to them (the oldest forgotten first). */
const OWNERS_KEPT = 10_000;
/** Admits a session unless `max` are open across the live replicas; removes the dead replicas' keys on the way. */
const ADMIT = `
local p, me, sid, max = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local open = 0
for _, r in ipairs(redis.call('SMEMBERS', p .. ':replicas')) do
  if redis.call('EXISTS', p .. ':alive:' .. r) == 1 then
    open = open + redis.call('SCARD', p .. ':owned:' .. r)
  else
    for _, s in ipairs(redis.call('SMEMBERS', p .. ':owned:' .. r)) do redis.call('DEL', p .. ':session:' .. s) end
    redis.call('DEL', p .. ':owned:' .. r)
    redis.call('SREM', p .. ':replicas', r)
  end
end
if open >= max then return open end
redis.call('SET', p .. ':session:' .. sid, me)
redis.call('SADD', p .. ':owned:' .. me, sid)
return -1`;

/**
 * The live owner of a session and its liveness key's value (its advertised address, or '1'), or false; a session
 * whose owner is gone is removed.
 */
const OWNER = `
local p, sid = ARGV[1], ARGV[2]
local owner = redis.call('GET', p .. ':session:' .. sid)
if not owner then return false end
local alive = redis.call('GET', p .. ':alive:' .. owner)
if alive then return {owner, alive} end
redis.call('DEL', p .. ':session:' .. sid)
redis.call('SREM', p .. ':owned:' .. owner, sid)
return false`;

/** Forgets session `sid`, this replica's: one script, so the count never sees it half gone. */
/**
 * One call of KEYS[1] under ARGV[1] calls in ARGV[2] ms, as a sliding log (see gateway/rate.ts) in a sorted set
 * scored by the store's clock, so that every replica counts on one; ARGV[3] makes the call's member unique. 0 when
 * taken, else the milliseconds until the oldest call leaves the period.
 */
const RATE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local period = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - period)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, math.ceil(tonumber(oldest[2]) + period - now))
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], period)
return 0
`;

const RELEASE = `
local p, me, sid = ARGV[1], ARGV[2], ARGV[3]
redis.call('DEL', p .. ':session:' .. sid)
redis.call('SREM', p .. ':owned:' .. me, sid)
return 1`;

/** A command the store took and did not answer in time: it may still run it (a stall ends, and it does). */
class StoreSilent extends StoreUnavailable {
  override name = 'StoreSilent';
}

/** `redis://user:secret@host:6379/0` as `redis://host:6379/0`: a store's password never reaches a log. */
function storeName(url: string): string {
  if (url.startsWith('redis+sentinel://')) return url.replace(/^(redis\+sentinel:\/\/)[^@/]*@/, '$1');
  return urlWithoutCredentials(url) ?? 'the store';
}

/** `prefix` as a hash tag (`{prefix}`), unless it has one already: every key under it is in one Cluster slot. */
function hashTagged(prefix: string): string {
  return /\{[^}]+\}/.test(prefix) ? prefix : `{${prefix}}`;
}

export class RedisStore implements ReplicaStore {
  readonly replica = randomUUID();
  /** The store's URL: the one given, or the primary followed to after a failover. */
  #url: string;
  #following = false;
  readonly #prefix: string;
  #client: StoreConnection;
  #subscriber: StoreConnection;
  readonly #log: Logger;
  /** Sessions this replica owns, registered again if the store comes back empty (a restart without persistence). */
  readonly #local = new Set<string>();
  /** Sessions ended here whose removal from the store is on its way, and when it is done. */
  readonly #releasing = new Map<string, Promise<void>>();
  /** Sessions ended here that the store could not be told of (it did not answer): told at the next beat. */
  readonly #unreleased = new Set<string>();
  /** Requests this replica carried to an owner, by tunnel id. */
  readonly #carried = new Map<string, Carried>();
  /** Requests other replicas carried here, served as if they had come in directly. */
  readonly #here: CarriedHere;
  /** The subscriber lost its connection after being ready: answers published meanwhile never reached this replica. */
  #subscriberGap = false;
  /**
   * The owners of sessions this replica carried requests for. A remembered owner needs no lookup: the owner
   * itself answers 404 for a session it no longer has, and one that is gone is found at once (no one receives
   * the request) or by the liveness watch.
   */
  readonly #owners = new Map<string, string>();
  /** Owners of carried requests found without a liveness key, and at how many checks in a row. */
  readonly #missing = new Map<string, number>();
  #nextTunnel = 1;
  #beat: NodeJS.Timeout | undefined;
  #watch: NodeJS.Timeout | undefined;
  #lastError: string | undefined;
  #closed = false;
  /** A beat has reached the store: a later beat that finds no liveness key of this replica's follows a gap. */
  #beaten = false;
  #subscriberReady = false;
  /**
   * Set while the store refuses writes (READONLY: the node serve is connected to became a replica, after a
   * failover or a switchover): /healthz says 503 until a write succeeds again (the heartbeat tries every beat).
   */
  #readOnly: string | undefined;
  /** Set while the store is connected and does not answer (paused, overloaded): /healthz says 503 until it does. */
  #stalled: string | undefined;
  /** A command found the store silent: the next that succeeds registers this replica's sessions again. */
  #afterStall = false;
  /** This replica's advertised origin (--advertise-url): other replicas forward its sessions' requests there. */
  readonly #address: string | undefined;
  /** Other replicas' advertised origins (undefined: none, carried through Redis), by replica id. */
  readonly #addresses = new Map<string, string | undefined>();
  /** Replicas whose address could not be reached, and until when their requests go through Redis instead. */
  readonly #unreachable = new Map<string, number>();
  /** The key replicas prove themselves with to each other over HTTP (see peer.ts), from the store. */
  #peerKey: string | undefined;
  /** A forward found an owner that does not share the key (the store lost it): read it again. */
  #peerKeyStale = false;

  constructor(url: string, prefix: string, log: Logger, address?: string) {
    this.#url = url;
    this.#address = address;
    this.#prefix = hashTagged(prefix);
    this.#log = log;
    [this.#client, this.#subscriber] = this.#connections(url);
    this.#here = new CarriedHere(this.replica, (to, envelope) => this.#publish(to, envelope));
  }

  /** The store's address for messages, without credentials (the node followed to, after a failover). */
  get name(): string {
    return storeName(this.#url);
  }

  /** A command client and a subscriber for `url`, their events wired to this store (while they are its own). */
  #connections(url: string): [StoreConnection, StoreConnection] {
    const client = connectionFor(url);
    const subscriber = connectionFor(url);
    const current = (c: StoreConnection): boolean => c === this.#client || c === this.#subscriber;
    for (const c of [client, subscriber]) c.on('error', (err: Error) => current(c) && this.#failed(err));
    subscriber.on('error', () => {
      if (current(subscriber) && this.#subscriberReady) this.#subscriberGap = true;
    });
    subscriber.on('ready', () => {
      if (!current(subscriber)) return;
      this.#subscriberReady = true;
      if (!this.#subscriberGap) return;
      this.#subscriberGap = false;
      // What was published to this replica while its subscriber was away is gone: every request it carried then
      // ends with an error that says it may have run, and its owner is told the client left.
      this.#loseAll();
    });
    // Back after an outage: beat at once, and register this replica's sessions again in case the store lost them.
    client.on('ready', () => {
      if (!current(client)) return;
      if (this.#lastError !== undefined) this.#log.info('store.up', `the session store ${this.name} answers again`, { store: this.name });
      this.#lastError = undefined;
      void this.#heartbeat(true);
    });
    return [client, subscriber];
  }

  /** Connects `subscriber` and subscribes it to this replica's channel. */
  async #subscribe(subscriber: StoreConnection): Promise<void> {
    await subscriber.connect();
    await subscriber.subscribe(this.#channel(this.replica), (text) => this.#received(text));
  }

  /** Every request carried to another replica ends with an error that says it may have run; their owners are told. */
  #loseAll(): void {
    for (const [t, carried] of [...this.#carried]) this.#lose(t, carried);
  }

  /**
   * Connects both clients. Resolves once they are connected, or after COMMAND_MS when the store does not answer:
   * serve starts either way, the clients go on trying, and until they connect new sessions get 503 (and
   * /healthz says why).
   */
  async start(): Promise<void> {
    const connected = Promise.all([this.#client.connect(), this.#subscribe(this.#subscriber)]).catch((err: Error) => this.#failed(err));
    this.#beat = setInterval(() => void this.#heartbeat(false), BEAT_MS);
    this.#beat.unref();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([connected, new Promise((resolve) => (timer = setTimeout(resolve, COMMAND_MS)))]);
    clearTimeout(timer);
    // Alive before the first session: a Cluster client is ready only once it knows the slots, after its nodes'
    // 'ready' (whose beat found it not ready yet).
    await this.#heartbeat(false);
  }

  /**
   * The node this store uses became a replica (READONLY: a FAILOVER, a switchover) and names its primary in ROLE:
   * the store moves there, registers its sessions, and goes on. Only for a node given by its address (Sentinel
   * and Cluster clients follow a failover by themselves). A primary that cannot be reached leaves the store where
   * it was, saying READONLY, and the next beat tries again.
   */
  async #followPrimary(): Promise<void> {
    if (this.#following || this.#closed || !/^rediss?:\/\//.test(this.#url)) return;
    this.#following = true;
    try {
      const role = await this.#command<unknown[]>(['ROLE']).catch(() => undefined);
      if (!Array.isArray(role) || role[0] !== 'slave' || typeof role[1] !== 'string') return;
      const next = new URL(this.#url);
      next.hostname = role[1];
      next.port = String(role[2]);
      if (next.toString() === this.#url) return;
      const [client, subscriber] = this.#connections(next.toString());
      const ready = await Promise.race([
        Promise.all([client.connect(), this.#subscribe(subscriber)]).then(() => true),
        new Promise<false>((resolve) => setTimeout(resolve, COMMAND_MS, false)),
      ]).catch(() => false);
      if (!ready || this.#closed) {
        for (const c of [client, subscriber]) c.destroy();
        return;
      }
      const before = this.name;
      const old = [this.#client, this.#subscriber];
      [this.#client, this.#subscriber] = [client, subscriber];
      this.#url = next.toString();
      this.#readOnly = undefined;
      this.#log.warn('store.failover', `the session store ${before} is a replica now: following its primary, ${this.name}`, {
        store: this.name,
        was: before,
      });
      for (const c of old) void c.close().catch(() => c.destroy());
      // Answers published on the old node while this replica moved may be lost.
      this.#loseAll();
      await this.#heartbeat(true);
    } finally {
      this.#following = false;
    }
  }

  problem(): string | undefined {
    if (this.#readOnly !== undefined)
      return `the session store ${this.name} takes no writes (${this.#readOnly}): it is a replica now, and no session can be admitted`;
    if (this.#stalled !== undefined) return `the session store ${this.name} stalls (${this.#stalled}): no session can be admitted`;
    if (this.#client.isReady && this.#subscriber.isReady) return undefined;
    return `the session store ${this.name} is unreachable${this.#lastError === undefined ? '' : ` (${this.#lastError})`}`;
  }

  async admit(id: string, max: number): Promise<number | undefined> {
    const open = await this.#command<number>(['EVAL', ADMIT, '1', this.#key('replicas'), this.#prefix, this.replica, id, String(max)]).catch(
      (err: unknown) => {
        // Refused (503), yet a store that stalled may still run the script once it wakes: the session would count
        // against the limit with nobody to end it. It is released with the next beat that reaches the store.
        this.#unreleased.add(id);
        throw err;
      },
    );
    if (open >= 0) return open;
    this.#local.add(id);
    return undefined;
  }

  rate(key: string, count: number, periodMs: number): Promise<number> {
    const hashed = createHash('sha256').update(key).digest('base64url');
    return this.#command<number>(['EVAL', RATE, '1', this.#key('rate', hashed), String(count), String(periodMs), randomUUID()]);
  }

  async claimOnce(kind: string, id: string, ttlMs: number): Promise<boolean> {
    return (await this.#command<string | null>(['SET', this.#key(kind, id), '1', 'NX', 'PX', String(ttlMs)])) === 'OK';
  }

  release(id: string): Promise<void> {
    const releasing = this.#releasing.get(id);
    if (releasing !== undefined) return releasing;
    if (!this.#local.delete(id)) return Promise.resolve();
    return this.#forget(id);
  }

  /** Removes session `id` from the store; one the store does not take is kept for the next beat. */
  #forget(id: string): Promise<void> {
    const done = this.#command(['EVAL', RELEASE, '1', this.#key('replicas'), this.#prefix, this.replica, id]).then(
      () => void this.#unreleased.delete(id),
      () => void this.#unreleased.add(id),
    );
    const releasing = done.finally(() => this.#releasing.delete(id));
    this.#releasing.set(id, releasing);
    return releasing;
  }

  async ownerOf(id: string): Promise<string | undefined> {
    const known = this.#owners.get(id);
    if (known !== undefined) return known;
    const found = await this.#command<[string, string] | null>(['EVAL', OWNER, '1', this.#key('replicas'), this.#prefix, id]);
    if (found === null) return undefined;
    const [owner, alive] = found;
    this.#learnAddress(owner, alive);
    if (this.#owners.size >= OWNERS_KEPT) this.#owners.delete(this.#owners.keys().next().value!);
    this.#owners.set(id, owner);
    return owner;
  }

  get peerKey(): string | undefined {
    return this.#peerKey;
  }

  async forward(owner: string, request: TunnelRequest, res: ServerResponse): Promise<boolean> {
    const address = await this.#addressOf(owner);
    if (address !== undefined && this.#peerKey !== undefined && !((this.#unreachable.get(owner) ?? 0) > Date.now())) {
      if ((await forwardDirect(address, this.#peerKey, request, res)) === 'sent') return true;
      // Not reached (no connection, or a peer key the owner does not share, after the store lost it): through
      // Redis instead, which reaches every replica, and so for a while; the key is read again at the next beat.
      this.#peerKeyStale = true;
      this.#unreachable.set(owner, Date.now() + UNREACHABLE_MS);
    }
    return this.#tunnel(owner, request, res);
  }

  /** The address `owner` advertises (from the lookup that found it, else its liveness key), or undefined. */
  async #addressOf(owner: string): Promise<string | undefined> {
    if (this.#addresses.has(owner)) return this.#addresses.get(owner);
    const alive = await this.#command<string | null>(['GET', this.#key('alive', owner)]).catch(() => null);
    if (alive === null) return undefined;
    return this.#learnAddress(owner, alive);
  }

  /** Keeps what `owner`'s liveness key says of its address ('1': it has none). */
  #learnAddress(owner: string, alive: string): string | undefined {
    const address = /^https?:\/\//.test(alive) ? alive : undefined;
    if (this.#addresses.size >= OWNERS_KEPT) this.#addresses.delete(this.#addresses.keys().next().value!);
    this.#addresses.set(owner, address);
    return address;
  }

  /** Carries a request to its owner through Redis pub/sub. */
  async #tunnel(owner: string, request: TunnelRequest, res: ServerResponse): Promise<boolean> {
    const t = String(this.#nextTunnel++);
    this.#carried.set(t, { owner, res, method: request.method, received: 0, acked: 0, draining: false });
    const body = pieces(request.body, PIECE_CHARS);
    const send = async (): Promise<number> => {
      for (const text of body.slice(0, -1)) await this.#publish(owner, { k: 'part', t, from: this.replica, text });
      // Without its 'request' the owner runs nothing (its parts are dropped after a while): only a silence now
      // leaves the request perhaps on its way.
      return this.#publish(owner, { k: 'request', t, from: this.replica, ...request, body: body[body.length - 1]! }).catch((err: unknown) => {
        if (!(err instanceof StoreSilent)) throw err;
        throw new MayHaveRun(`${err.message} after it took the request for the replica that holds the session: the request may have run`);
      });
    };
    const receivers = await send().catch((err: unknown) => {
      this.#carried.delete(t);
      throw err;
    });
    if (receivers === 0) {
      this.#carried.delete(t);
      this.#forgetOwner(owner);
      return false;
    }
    whenGone(res, () => {
      if (this.#carried.delete(t)) void this.#publish(owner, { k: 'gone', t, from: this.replica }).catch(() => undefined);
    });
    this.#watchOwners();
    return true;
  }

  onForwarded(handler: (request: TunnelRequest, res: TunnelResponse) => void): void {
    this.#here.onRequest(handler);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#beat);
    clearInterval(this.#watch);
    this.#here.close();
    for (const { res } of this.#carried.values()) res.destroy();
    const ids = [...this.#local, ...this.#unreleased];
    this.#local.clear();
    this.#unreleased.clear();
    if (this.#client.isReady) {
      const keys = [this.#key('alive', this.replica), this.#key('owned', this.replica), ...ids.map((id) => this.#key('session', id))];
      await this.#command(['DEL', ...keys])
        .then(() => this.#command(['SREM', this.#key('replicas'), this.replica]))
        .catch(() => undefined);
    }
    // A client still trying to connect is destroyed: closing it would wait for the store.
    for (const c of [this.#client, this.#subscriber]) {
      if (c.isOpen) await (c.isReady ? c.close().catch(() => c.destroy()) : c.destroy());
    }
  }

  /** A replica found gone: no session is sent to it again without a fresh lookup. */
  #forgetOwner(owner: string): void {
    for (const [id, known] of this.#owners) if (known === owner) this.#owners.delete(id);
    this.#addresses.delete(owner);
    this.#unreachable.delete(owner);
  }

  #key(kind: string, id?: string): string {
    return id === undefined ? `${this.#prefix}:${kind}` : `${this.#prefix}:${kind}:${id}`;
  }

  #channel(replica: string): string {
    return this.#key('to', replica);
  }

  /**
   * One command, bounded in time; any failure is StoreUnavailable naming the store. The bound is a timer of our
   * own: the client's `timeout` option does not end a command already written to a store that stopped answering.
   */
  async #command<T>(args: string[]): Promise<T> {
    if (!this.#client.isReady) throw new StoreUnavailable(this.problem() ?? `the session store ${this.name} is not connected`);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.#stalled = `it did not answer within ${COMMAND_MS} ms`;
        this.#afterStall = true;
        reject(new StoreSilent(`the session store ${this.name} did not answer within ${COMMAND_MS} ms`));
      }, COMMAND_MS);
    });
    try {
      // Every key is under the prefix's hash tag: the replica set's key routes any command on a Cluster.
      const answer = await Promise.race([this.#client.sendCommand(this.#key('replicas'), args) as Promise<T>, late]);
      this.#stalled = undefined;
      if (this.#afterStall) {
        // The commands sent during the stall ran when it ended, the beats among them, and found what they found
        // (this replica's liveness lapsed, its sessions perhaps swept by an admission queued before them): its
        // sessions are registered again.
        this.#afterStall = false;
        void this.#heartbeat(true);
      }
      if (this.#readOnly !== undefined && WRITES.has(args[0]!)) {
        this.#readOnly = undefined;
        this.#log.info('store.writable', `the session store ${this.name} takes writes again`, { store: this.name });
        // A node that was a replica took its primary's data: this replica's sessions are registered again.
        void this.#heartbeat(true);
      }
      return answer;
    } catch (err) {
      if (err instanceof StoreUnavailable) throw err;
      this.#stalled = undefined;
      const message = safeLine((err as Error).message);
      if (message.startsWith('READONLY')) {
        if (this.#readOnly === undefined)
          this.#log.error('store.read_only', `the session store ${this.name} takes no writes: ${message.slice(0, 120)}`, { store: this.name });
        this.#readOnly = message.slice(0, 120);
        void this.#followPrimary();
      }
      throw new StoreUnavailable(`the session store ${this.name} failed: ${message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  #publish(replica: string, envelope: Envelope): Promise<number> {
    return this.#command<number>([this.#client.publish, this.#channel(replica), JSON.stringify(envelope)]);
  }

  async #heartbeat(again: boolean): Promise<void> {
    if (this.#closed || !this.#client.isReady) return;
    try {
      // GET: the key's value before this beat. None means this replica was taken for dead (the store stalled or was
      // out of reach past ALIVE_MS, or lost its data), and an admission since may have swept its sessions away:
      // they are registered again, or other replicas would answer 404 for sessions this one still serves.
      const before = await this.#command<string | null>([
        'SET',
        this.#key('alive', this.replica),
        this.#address ?? '1',
        'PX',
        String(ALIVE_MS),
        'GET',
      ]);
      if (before === null && this.#local.size > 0 && this.#beaten) again = true;
      this.#beaten = true;
      await this.#command(['SADD', this.#key('replicas'), this.replica]);
      if (this.#peerKey === undefined || this.#peerKeyStale || again) {
        // The replicas' shared key for direct forwarding: the first to ask sets it, every other reads it.
        const mine = randomBytes(32).toString('base64url');
        this.#peerKey = (await this.#command<string | null>(['SET', this.#key('peer-key'), mine, 'NX', 'GET'])) ?? mine;
        this.#peerKeyStale = false;
      }
      if (again && this.#local.size > 0) {
        for (const id of this.#local) await this.#command(['SET', this.#key('session', id), this.replica]);
        await this.#command(['SADD', this.#key('owned', this.replica), ...this.#local]);
      }
      for (const id of this.#unreleased) {
        if (this.#releasing.has(id)) continue;
        await this.#forget(id);
        if (this.#unreleased.has(id)) break;
      }
      await this.#here.resendCuts();
    } catch {
      // The next beat tries again; requests meanwhile get 503 from their own commands.
    }
  }

  #failed(err: Error): void {
    const text = safeLine(err.message || err.name).slice(0, 200);
    if (this.#lastError === undefined && !this.#closed)
      this.#log.error('store.down', `the session store ${this.name} is unreachable: ${text}`, { store: this.name });
    this.#lastError = text;
  }

  #received(text: string): void {
    let envelope: Envelope;
    try {
      envelope = JSON.parse(text) as Envelope;
    } catch {
      return;
    }
    if (envelope.k === 'answer') for (const frame of envelope.frames) this.#answer(envelope.t, frame);
    else this.#here.received(envelope);
  }

  /** Part of an answer to a request this replica carried out (tunnel `t`). */
  #answer(t: string, frame: TunnelFrame): void {
    const carried = this.#carried.get(t);
    if (carried === undefined) return;
    const ack = (bytes: number): void => void this.#publish(carried.owner, { k: 'ack', t, from: this.replica, bytes }).catch(() => undefined);
    if (writeAnswer(carried, frame, () => this.#carried.get(t) === carried, ack) === 'ended') this.#carried.delete(t);
  }

  /** A carried request whose answer can no longer all arrive: ended here with an error, its owner told the client left. */
  #lose(t: string, carried: Carried): void {
    this.#carried.delete(t);
    this.#publish(carried.owner, { k: 'gone', t, from: this.replica }).catch(() => undefined);
    answerLost(carried.res);
  }

  /** While requests are out at other replicas, checks every second that their owners are alive. */
  #watchOwners(): void {
    if (this.#watch !== undefined) return;
    this.#watch = setInterval(() => void this.#checkOwners(), WATCH_MS);
    this.#watch.unref();
  }

  async #checkOwners(): Promise<void> {
    if (this.#carried.size === 0) {
      clearInterval(this.#watch);
      this.#watch = undefined;
      this.#missing.clear();
      return;
    }
    const owners = new Set([...this.#carried.values()].map((c) => c.owner));
    for (const owner of owners) {
      // A check the store did not answer is no sign of life: the answers of that owner may be lost as well.
      const alive = await this.#command<number>(['EXISTS', this.#key('alive', owner)]).catch(() => undefined);
      if (alive === undefined) {
        for (const [t, carried] of [...this.#carried]) if (carried.owner === owner) this.#lose(t, carried);
        continue;
      }
      if (alive === 1) {
        this.#missing.delete(owner);
        continue;
      }
      // Gone at the second check in a row: a Redis restarted without its data has no liveness key of a live owner
      // until that owner reconnects and beats (within a second or two), and its requests are still running.
      const misses = (this.#missing.get(owner) ?? 0) + 1;
      this.#missing.set(owner, misses);
      if (misses < OWNER_MISSES) continue;
      this.#missing.delete(owner);
      this.#forgetOwner(owner);
      for (const [t, carried] of this.#carried) {
        if (carried.owner !== owner) continue;
        this.#carried.delete(t);
        ownerGone(carried.res, carried.method);
      }
    }
  }
}

/**
 * The answer to a request whose owner died before finishing it: if nothing was sent yet, 502 saying that a POST
 * may have run (its owner had it), or 404 for a GET (a stream: nothing ran, and the session is gone); else the end.
 */
function ownerGone(res: ServerResponse, method: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const [status, why] =
    method === 'POST'
      ? [
          502,
          'the replica that held the session stopped while it had this request: it may have run; the session is gone (start a new one with initialize)',
        ]
      : [404, 'the replica that held the session has stopped (start a new session with initialize)'];
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(rpcError(null, CODES.serverError, why)));
}

/** The store for `serve --store <url>`, connected (or retrying in the background if the store is down). */
export async function redisStore(url: string, prefix: string, log: Logger, address?: string): Promise<RedisStore> {
  const store = new RedisStore(url, prefix, log, address);
  await store.start();
  return store;
}
