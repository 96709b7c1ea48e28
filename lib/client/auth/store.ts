/*
 * Where the authorization flow keeps tokens and registrations: in memory (the default), or in files that other
 * processes share (the command line), with a lock so that one of them signs in or refreshes at a time.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { chmod, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { AuthRecord, AuthStore } from './types.js';

/** Records in this process's memory, gone when it exits. `lock` keeps concurrent users of one store in turn. */
export function memoryAuthStore(): AuthStore {
  const records = new Map<string, string>();
  const locks = new Map<string, Promise<void>>();
  return {
    async get(key) {
      const text = records.get(key);
      return text === undefined ? undefined : (JSON.parse(text) as AuthRecord);
    },
    async set(key, record) {
      records.set(key, JSON.stringify(record));
    },
    async delete(key) {
      records.delete(key);
    },
    async lock(key) {
      const before = locks.get(key) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((resolve) => (release = resolve));
      const chained = before.then(() => mine);
      locks.set(key, chained);
      await before;
      return async () => {
        release();
        if (locks.get(key) === chained) locks.delete(key);
      };
    },
  };
}

export interface FileAuthStoreOptions {
  /** @defaultValue $MCP_FRAME_AUTH_DIR, else $XDG_CONFIG_HOME/mcp-frame/auth, else ~/.config/mcp-frame/auth */
  dir?: string;
  /** A lock older than this is taken as left by a process that died. @defaultValue 600000 (10 minutes) */
  staleLockMs?: number;
  /** How long lock() waits before failing. @defaultValue 660000 (11 minutes: a sign-in may take 5) */
  lockTimeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** The folder fileAuthStore() uses by default. */
export function defaultAuthDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MCP_FRAME_AUTH_DIR) return env.MCP_FRAME_AUTH_DIR;
  const config = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(config, 'mcp-frame', 'auth');
}

/** The file name of a key: a hash (a URL is no file name), readable enough to tell files apart. */
function fileOf(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 32);
}

/**
 * Records in files, one per key: the folder made 0700, files 0600, each written to a temporary file and renamed
 * over the old one (a reader never sees half a record). `lock` is a lock file made with O_EXCL; one left by a
 * process that died (its pid gone, or older than staleLockMs) is taken over.
 */
export interface FileAuthStore extends AuthStore {
  readonly dir: string;
  /** Every record kept, with its key. */
  list(): Promise<Array<{ key: string; record: AuthRecord }>>;
}

export function fileAuthStore(options: FileAuthStoreOptions = {}): FileAuthStore {
  const dir = options.dir ?? defaultAuthDir(options.env);
  const staleMs = options.staleLockMs ?? 600_000;
  const waitMs = options.lockTimeoutMs ?? 660_000;
  let made = false;
  const ensureDir = async (): Promise<void> => {
    if (made) return;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
    made = true;
  };
  const path = (key: string, ext: string): string => join(dir, `${fileOf(key)}.${ext}`);
  const read = async (file: string): Promise<{ key: string; record: AuthRecord } | undefined> => {
    try {
      const value = JSON.parse(await readFile(file, 'utf8')) as { key: string; record: AuthRecord };
      return typeof value?.key === 'string' && typeof value.record === 'object' ? value : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    dir,
    async get(key) {
      const found = await read(path(key, 'json'));
      return found?.key === key ? found.record : undefined;
    },
    async set(key, record) {
      await ensureDir();
      const target = path(key, 'json');
      const temp = `${target}.${process.pid}.${Date.now()}.tmp`;
      const handle = await open(temp, 'w', 0o600);
      try {
        await handle.writeFile(`${JSON.stringify({ key, record }, null, 2)}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, target);
    },
    async delete(key) {
      await rm(path(key, 'json'), { force: true });
    },
    async list() {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch {
        return [];
      }
      const found: Array<{ key: string; record: AuthRecord }> = [];
      for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
        const value = await read(join(dir, name));
        if (value !== undefined) found.push(value);
      }
      return found;
    },
    async lock(key) {
      await ensureDir();
      const file = path(key, 'lock');
      // Ours alone: a release removes the lock only while it still holds this, never one another process took over.
      const mine = JSON.stringify({ pid: process.pid, at: Date.now(), nonce: randomUUID() });
      const started = Date.now();
      for (;;) {
        try {
          const handle = await open(file, 'wx', 0o600);
          await handle.writeFile(mine);
          await handle.close();
          let released = false;
          return async () => {
            if (released) return;
            released = true;
            if ((await readFile(file, 'utf8').catch(() => undefined)) === mine) await rm(file, { force: true });
          };
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        }
        const stale = await staleLock(file, staleMs);
        if (stale !== undefined && (await takeOver(file, stale))) continue;
        if (Date.now() - started > waitMs) throw new Error(`the auth store lock ${file} was held for more than ${waitMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/**
 * Removes a stale lock, if it is still the one judged stale (`text`): two waiters can both judge a dead holder's
 * lock stale, and the second must not remove the lock the first has taken since. The compare and the removal run
 * under a takeover file made with O_EXCL, so no other waiter does the same at once. False when another waiter is
 * taking over now.
 */
async function takeOver(file: string, text: string): Promise<boolean> {
  const guard = `${file}.takeover`;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(guard, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // A takeover takes milliseconds: one older than TAKEOVER_STALE_MS was left by a process that died in it.
    const info = await stat(guard).catch(() => undefined);
    if (info !== undefined && Date.now() - info.mtimeMs > TAKEOVER_STALE_MS) await rm(guard, { force: true });
    return false;
  }
  try {
    if ((await readFile(file, 'utf8').catch(() => undefined)) === text) await rm(file, { force: true });
  } finally {
    await handle.close();
    await rm(guard, { force: true });
  }
  return true;
}

const TAKEOVER_STALE_MS = 5000;

/** The text of a lock file whose process is gone, or that is older than `staleMs`; undefined while it is held (or gone). */
async function staleLock(file: string, staleMs: number): Promise<string | undefined> {
  try {
    const [info, text] = await Promise.all([stat(file), readFile(file, 'utf8')]);
    if (Date.now() - info.mtimeMs > staleMs) return text;
    const pid = Number((JSON.parse(text || '{}') as { pid?: unknown }).pid);
    if (!Number.isInteger(pid) || pid <= 0) return Date.now() - info.mtimeMs > 1000 ? text : undefined;
    try {
      process.kill(pid, 0);
      return undefined;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ESRCH' ? text : undefined;
    }
  } catch {
    // Gone between the open and now (or half written): not stale, just free or about to be held.
    return undefined;
  }
}
