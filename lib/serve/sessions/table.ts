/*
 * The sessions of every transport, counted together against maxSessions (across the replicas, with a store),
 * admitted a few server starts at a time (see StartGate), and closed when idle.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../log.js';
import { Refusal } from '../../protocol/refusal.js';
import type { ReplicaStore } from '../replicas/index.js';
import type { ServedChild } from './children.js';
import type { ServeContext } from './context.js';
import type { LegacySession } from './legacy.js';
import { holdUntilAnswered, type StartGate } from './start-gate.js';
import type { StreamableSession } from './streamable.js';

/** The sessions of every transport, counted together against maxSessions. */
export interface SessionTable {
  streamable: Map<string, StreamableSession>;
  legacy: Map<string, LegacySession>;
  /** Sessions of every kind (socket connections included) open now. */
  count(): number;
  maxSessions: number;
  /** Registers a session's end (logged once). */
  ended(kind: 'streamable' | 'legacy', id: string, log: Logger, why: string): void;
  /** Where replicas share sessions (serve --store), if they do. */
  store: ReplicaStore | undefined;
  /**
   * A new session's id, once there is room for it (across the replicas, with a store) and its server's turn to
   * start has come, or why not, and when to try again.
   */
  admit(): Promise<Admitted | Refusal>;
}

/** A session admitted: its id, and its server's turn to start, held until the server answers (or fails). */
export interface Admitted {
  id: string;
  starting(child: ServedChild): void;
  /** No session after all (its client left): the turn and the place are given back. */
  abandon(): void;
}

export function sessionTable(
  ctx: ServeContext,
  maxSessions: number,
  socketChildren: Set<ServedChild>,
  store: ReplicaStore | undefined,
  gate: StartGate,
): SessionTable {
  let admitting = 0;
  const table: SessionTable = {
    streamable: new Map(),
    legacy: new Map(),
    maxSessions,
    store,
    count: () => table.streamable.size + table.legacy.size + socketChildren.size,
    ended(kind, id, log, why) {
      void store?.release(id);
      if (table[kind].delete(id) && !ctx.lifecycle.closing) log.info('session.ended', `ended: ${why}`, { why });
    },
    async admit() {
      const id = randomUUID();
      // Sessions admitted and not yet in the table (waiting for their turn to start) count too.
      if (store === undefined && table.count() + admitting >= maxSessions) return new Refusal(503, `${maxSessions} sessions are open already`);
      if (store !== undefined) {
        const open = await store.admit(id, maxSessions).catch((err: Error) => err.message);
        if (typeof open === 'string') return new Refusal(503, open);
        if (open !== undefined) return new Refusal(503, `${maxSessions} sessions are open already across the replicas`);
      }
      // Room for it: now its server's turn to start (a burst of opens starts a few servers at a time).
      admitting++;
      const leave = await gate.enter().catch((err: Refusal) => err);
      admitting--;
      if (leave instanceof Refusal) {
        void store?.release(id);
        ctx.log.warn('session.refused', `refused a session: ${leave.reason}`, { why: leave.reason });
        return leave;
      }
      return {
        id,
        starting: (child: ServedChild) => holdUntilAnswered(child, leave),
        abandon: () => {
          leave();
          void store?.release(id);
        },
      };
    },
  };
  return table;
}

/** Closes sessions that have had no request and no open stream for `idleMs`; checked a few times per period. */
export function sweepIdle(table: SessionTable, idleMs: number, openIdleMs: number): NodeJS.Timeout {
  const timer = setInterval(
    () => {
      const now = Date.now();
      for (const session of table.streamable.values()) {
        if (session.attachedStreams > 0) continue;
        const idle = now - session.lastActive;
        // An initialize whose client gave up (a timeout, a crash) holds a server and a place under --max-sessions:
        // reaped soon, not after the idle time of a session in use.
        if (session.abandoned && idle > openIdleMs) void session.close(`its client sent nothing after initialize for ${openIdleMs} ms`);
        else if (idle > idleMs) void session.close(`idle for ${idleMs} ms`);
      }
    },
    Math.max(20, Math.min(Math.min(idleMs, openIdleMs) / 4, 30_000)),
  );
  timer.unref();
  return timer;
}
