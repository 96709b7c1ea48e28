import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { connect } from '../../lib/client/connect.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ALIVE_MS, type RedisStore, redisStore } from '../../lib/serve/replicas/redis-store.js';
import { type TunnelRequest, type TunnelResponse, tunnelRequest } from '../../lib/serve/replicas/store.js';
import { blackHole } from '../helpers/black-hole.js';
import { cutProxy } from '../helpers/cut-proxy.js';
import { FILLED_FORM } from '../helpers/elicitation.js';
import { ROOT } from '../helpers/fixtures.js';
import { within } from '../helpers/poll.js';
import { gone } from '../helpers/processes.js';
import { countIn, MCP_HEADERS, openStream, postUnread, rawRequest } from '../helpers/raw-http.js';
import {
  type RedisKind,
  type RedisServer,
  redisCommand,
  requireRedis,
  roleOf,
  startCluster,
  startRedis,
  startSentinelSet,
} from '../helpers/redis.js';
import { INIT, pidsOf, STEPS, type ServeProcess, serveProcess } from '../helpers/served.js';
import { teardown } from '../helpers/teardown.js';
import { tempDir } from '../helpers/temp.js';
import { freePort } from '../helpers/ports.js';
import { startIdp } from '../helpers/idp.js';
import { createLogger } from '../../lib/log.js';
import { TASKS_EXTENSION } from '../../lib/gateway/tasks.js';

type Json = Record<string, unknown>;

/** A logger that writes nothing (the store's lines are not under test here). */
const QUIET = createLogger({ write: () => undefined });

const EVERYTHING = [process.execPath, `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'];

interface Replica extends ServeProcess {
  url: string;
  close(): Promise<void>;
}

/** `mcp-frame serve --store <redis>` in a process of its own, server-everything behind it (no --store: in `args`). */
async function replica(store: string | undefined, args: string[] = [], env?: NodeJS.ProcessEnv, server = EVERYTHING): Promise<Replica> {
  const port = args.includes('--port') ? [] : ['--port', '0'];
  const proc = await serveProcess([...port, ...(store === undefined ? [] : ['--store', store]), ...args, '--', ...server], env);
  return {
    ...proc,
    url: proc.url!,
    close: async () => {
      if (proc.proc.exitCode === null && proc.proc.signalCode === null) proc.proc.kill('SIGTERM');
      await proc.exited;
    },
  };
}

const post = (url: string, session: string | undefined, body: unknown) =>
  rawRequest(url, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...(session === undefined ? {} : { 'mcp-session-id': session }) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** initialize on `url`, then initialized on `then` (another replica): the session's id. */
async function session(url: string, then = url): Promise<string> {
  const init = await post(url, undefined, INIT);
  expect(init.status, init.body).to.equal(200);
  const id = init.headers['mcp-session-id'] as string;
  expect((await post(then, id, { jsonrpc: '2.0', method: 'notifications/initialized' })).status).to.equal(202);
  return id;
}

const echo = (id: number, message: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message } } });

describe('serve --store: replicas that share sessions through Redis (a balancer without affinity)', function () {
  this.timeout(60_000);
  let redis: RedisServer;
  const open = teardown();
  before(async function () {
    if (!requireRedis(this)) return;
    redis = await startRedis();
  });
  after(() => redis?.close());
  afterEach(() => open.run());

  const replicas = (n: number, args: string[] = []): Promise<Replica[]> =>
    Promise.all(Array.from({ length: n }, () => replica(redis.url, args).then((r) => open.add(r))));

  /**
   * The MCP SDK client on one session through three replicas, each request to the next (two in three carried to
   * the owner): handshake, tools, progress, sampling answered through another replica, DELETE everywhere.
   */
  async function rotatingSession(three: Replica[]): Promise<void> {
    const sent = [0, 0, 0];
    let next = 0;
    // A balancer without affinity: each request goes to the next replica.
    const rotating = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const i = next++ % 3;
      sent[i]!++;
      const url = new URL(input instanceof Request ? input.url : input);
      return fetch(new URL(url.pathname + url.search, three[i]!.url), init);
    };
    const client = new Client({ name: 'rotating', version: '1.0.0' }, { capabilities: { sampling: {} } });
    let sampled = 0;
    client.setRequestHandler(CreateMessageRequestSchema, async () => {
      sampled++;
      return { model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled ünï 👋' } };
    });
    const transport = new StreamableHTTPClientTransport(new URL(three[0]!.url), { fetch: rotating });
    await client.connect(transport);
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).to.include.members(['echo', 'trigger-long-running-operation', 'trigger-sampling-request']);
    for (let i = 0; i < 6; i++) {
      expect(await client.callTool({ name: 'echo', arguments: { message: `ünï ${i}` } })).to.deep.include({
        content: [{ type: 'text', text: `Echo: ünï ${i}` }],
      });
    }
    const progress: number[] = [];
    await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    expect(progress).to.deep.equal([1, 2, 3]);
    const sampling = (await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 10 } })) as {
      content: Array<{ text: string }>;
    };
    expect(sampled).to.equal(1);
    expect(JSON.stringify(sampling.content)).to.include('sampled ünï 👋');
    // Every replica carried requests, and one of them owns the session's only child.
    expect(
      sent.every((n) => n >= 4),
      String(sent),
    ).to.equal(true);
    const owners = three.filter((r) => /session [0-9a-f]{8} started/.test(r.stderr()));
    expect(owners).to.have.length(1);
    const [pid] = pidsOf(owners[0]!.stderr().split('\n'));
    const id = transport.sessionId!;
    await transport.terminateSession();
    await client.close();
    expect(await gone(pid!, 5000)).to.equal(true);
    for (const r of three) expect((await post(r.url, id, echo(9, 'after'))).status).to.equal(404);
  }

  /** PUBLISH commands Redis has run: what crossed the tunnel. */
  const publishes = (server: RedisServer = redis, kind: RedisKind = 'redis'): number => {
    const stats = execFileSync(`${kind}-cli`, ['-p', String(server.port), 'INFO', 'commandstats'], { encoding: 'utf8' });
    return Number(/cmdstat_publish:calls=(\d+)/.exec(stats)?.[1] ?? 0);
  };

  /** Replicas that advertise their own address (--advertise-url), or `advertise`'s for the first. */
  const directReplicas = (n: number, advertise?: string, args: string[] = [], server = EVERYTHING): Promise<Replica[]> =>
    Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const port = await freePort();
        const url = i === 0 && advertise !== undefined ? advertise : `http://127.0.0.1:${port}`;
        return open.add(await replica(redis.url, ['--port', String(port), '--advertise-url', url, ...args], undefined, server));
      }),
    );

  it('the SDK client rotating over three replicas: handshake, tools, progress, sampling answered through another replica, DELETE everywhere', async () => {
    await rotatingSession(await replicas(3));
  });

  it('with --advertise-url, the same session with every carried request forwarded to its owner over HTTP: nothing through Redis pub/sub', async () => {
    const three = await directReplicas(3);
    const before = publishes();
    await rotatingSession(three);
    expect(publishes() - before).to.equal(0);
  });

  it("with --advertise-url, a client that stops reading through another replica stops the owner's server (HTTP's flow control), then gets every message", async () => {
    const [owner, front] = await directReplicas(2, undefined, [], [STEPS.command, ...STEPS.args]);
    const id = await session(owner!.url, owner!.url);
    const count = 1000;
    const flood = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'flood', arguments: { count, size: 64 * 1024 } } };
    const before = publishes();
    const res = await postUnread(front!.url, id, JSON.stringify(flood));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const written = (): number => Math.max(0, ...[...owner!.stderr().matchAll(/flood wrote (\d+)/g)].map((m) => Number(m[1])));
    // 1,000 messages of 64 KiB: what the pipes and the two replicas' socket buffers hold is far less.
    const held = written();
    expect(held, 'messages the server wrote while nobody read').to.be.below(count / 2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(written()).to.equal(held);
    const { count: delivered, tail } = await countIn(res, '"method":"notifications/message"');
    expect(delivered).to.equal(count);
    expect(tail).to.include(`${count} sent`);
    expect(publishes() - before).to.equal(0);
  });

  it('falls back to the tunnel for an owner whose advertised address cannot be reached, and refuses a forged peer key', async () => {
    const unreachable = `http://127.0.0.1:${await freePort()}`;
    const [owner, front] = await directReplicas(2, unreachable);
    const id = await session(owner!.url, owner!.url);
    const before = publishes();
    const answer = await post(front!.url, id, echo(2, 'through Redis'));
    expect(answer.status, answer.body).to.equal(200);
    expect(answer.body).to.include('Echo: through Redis');
    expect(publishes() - before).to.be.above(0);
    // A client that sends the peer header with a key of its own is refused before anything is read.
    const forged = await rawRequest(front!.url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'mcp-session-id': id, 'mcp-frame-peer': 'guessed', 'mcp-frame-caller': '{"subject":"x"}' },
      body: JSON.stringify(echo(3, 'forged')),
    });
    expect(forged.status).to.equal(403);
    expect(forged.body).to.match(/peer key/);
  });

  it('falls back to the tunnel within 3 s for an owner whose advertised address drops packets, and straight away for the next requests', async () => {
    const hole = open.add(await blackHole());
    const [owner, front] = await directReplicas(2, hole.url);
    const id = await session(owner!.url, owner!.url);
    const before = publishes();
    let started = Date.now();
    const first = await post(front!.url, id, echo(2, 'after the connect timeout'));
    const waited = Date.now() - started;
    expect(first.status, first.body).to.equal(200);
    expect(first.body).to.include('Echo: after the connect timeout');
    // The connect timeout (3 s), not the system's (minutes), and not at once: the address was tried.
    expect(waited).to.be.within(2500, 8000);
    expect(publishes() - before).to.be.above(0);
    // The owner's address is not tried again for a while: the next requests go through Redis at once.
    started = Date.now();
    for (let i = 0; i < 3; i++) expect((await post(front!.url, id, echo(3 + i, 'at once'))).body).to.include('Echo: at once');
    expect(Date.now() - started).to.be.below(2500);
  });

  it('a gateway of two servers as replicas: a session opened on one is served, both servers and their questions, through the other', async () => {
    const dir = tempDir('replica-gateway-');
    const config = join(dir, 'mcp.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          everything: { command: EVERYTHING[0], args: EVERYTHING.slice(1) },
          files: { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-filesystem/dist/index.js`, dir] },
        },
      }),
    );
    const proc = await Promise.all([0, 1].map(() => serveProcess(['--port', '0', '--store', redis.url, '--all', '--config', config])));
    const two = proc.map((p) =>
      open.add({
        ...p,
        url: p.url!,
        close: async () => {
          if (p.proc.exitCode === null) p.proc.kill('SIGTERM');
          await p.exited;
        },
      }),
    );
    let next = 0;
    const rotating = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = new URL(input instanceof Request ? input.url : input);
      return fetch(new URL(url.pathname + url.search, two[next++ % 2]!.url), init);
    };
    const client = new Client({ name: 'rotating', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      model: 'm',
      role: 'assistant',
      content: { type: 'text', text: 'sampled through a replica' },
    }));
    await client.connect(new StreamableHTTPClientTransport(new URL(two[0]!.url), { fetch: rotating }));
    try {
      expect(client.getServerVersion()?.name).to.equal('mcp-frame');
      for (let i = 0; i < 4; i++) {
        expect(await client.callTool({ name: 'everything__echo', arguments: { message: `r${i}` } })).to.deep.include({
          content: [{ type: 'text', text: `Echo: r${i}` }],
        });
      }
      const allowed = await client.callTool({ name: 'files__list_allowed_directories', arguments: {} });
      expect(JSON.stringify(allowed.content)).to.include(dir);
      const sampled = await client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 10 } });
      expect(JSON.stringify(sampled.content)).to.include('sampled through a replica');
    } finally {
      await client.close();
    }
    expect(next).to.be.greaterThan(8);
  });

  it("a gateway's task (the tasks extension) made on one replica is asked after, given input and cancelled through the other", async () => {
    const config = join(tempDir('replica-tasks-'), 'mcp.json');
    const fixture = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/conformance.js`] };
    writeFileSync(config, JSON.stringify({ mcpServers: { fixture, steps: { command: STEPS.command, args: STEPS.args } } }));
    const two = await Promise.all(
      [0, 1].map(async () => {
        const p = await serveProcess(['--port', '0', '--store', redis.url, '--all', '--prefix', 'conflicts', '--config', config]);
        const close = async () => {
          if (p.proc.exitCode === null) p.proc.kill('SIGTERM');
          await p.exited;
        };
        return open.add({ ...p, url: p.url!, close });
      }),
    );
    const declares = { capabilities: { extensions: { [TASKS_EXTENSION]: {} } } };
    const [one, other] = await Promise.all(two.map((r) => connect({ type: 'http', url: r.url }, declares)));
    try {
      const made = (await one!.request('tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' } })) as Json;
      expect(made.resultType).to.equal('task');
      const taskId = made.taskId as string;
      expect(taskId, "the replica's id, the server's name, the server's id").to.match(/^[0-9a-f-]{36}\.fixture:/);
      const asked = (await within(5000, 'the task asks', async () => {
        const got = (await other!.request('tasks/get', { taskId })) as Json;
        return got.status === 'input_required' ? got : undefined;
      })) as Json;
      expect(asked.taskId).to.equal(taskId);
      const [key] = Object.keys(asked.inputRequests as Json);
      // An ack (its server's _meta aside): no task in it.
      const ackOnly = (ack: unknown) => Object.keys(ack as Json).filter((k) => k !== '_meta');
      const answer = { [key!]: { action: 'accept', content: { confirm: true } } };
      expect(ackOnly(await other!.request('tasks/update', { taskId, inputResponses: answer }))).to.deep.equal([]);
      const done = (await within(5000, 'the task completes', async () => {
        const got = (await one!.request('tasks/get', { taskId })) as Json;
        return got.status === 'completed' ? got : undefined;
      })) as Json;
      expect(done.result).to.deep.include({ content: [{ type: 'text', text: 'deleted a.txt' }] });
      const long = ((await one!.request('tools/call', { name: 'slow_compute', arguments: { seconds: 60 } })) as Json).taskId as string;
      expect(ackOnly(await other!.request('tasks/cancel', { taskId: long }))).to.deep.equal([]);
      expect(await one!.request('tasks/get', { taskId: long })).to.deep.include({ status: 'cancelled' });
    } finally {
      await Promise.all([one?.close(), other?.close()]);
    }
  });

  for (const direct of [false, true]) {
    it(`signed-in callers through replicas: a session answers its own caller through another replica, and 404 to anyone else${direct ? ' (over HTTP with --advertise-url)' : ''}`, async () => {
      const idp = await startIdp({ ada: {}, bob: {} });
      try {
        const resource = 'http://mcp.test/mcp';
        const signIn = ['--auth-issuer', idp.issuer, '--public-url', resource];
        const [one, two] = direct ? await directReplicas(2, undefined, signIn) : await replicas(2, signIn);
        const ada = await idp.mint({ aud: resource, sub: 'ada' });
        const bob = await idp.mint({ aud: resource, sub: 'bob' });
        const as = (token: string, url: string, session: string | undefined, body: unknown) =>
          rawRequest(url, {
            method: 'POST',
            headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, ...(session === undefined ? {} : { 'mcp-session-id': session }) },
            body: typeof body === 'string' ? body : JSON.stringify(body),
          });
        const init = await as(ada, one!.url, undefined, INIT);
        expect(init.status, init.body).to.equal(200);
        const id = init.headers['mcp-session-id'] as string;
        const own = await as(ada, two!.url, id, echo(2, 'carried ✓'));
        expect(own.status).to.equal(200);
        expect(own.body).to.include('Echo: carried ✓');
        const other = await as(bob, two!.url, id, echo(3, 'not yours'));
        expect(other.status).to.equal(404);
        // A client cannot name itself someone else by sending the header the replicas use between them.
        const forged = await rawRequest(two!.url, {
          method: 'POST',
          headers: {
            ...MCP_HEADERS,
            authorization: `Bearer ${bob}`,
            'mcp-session-id': id,
            'mcp-frame-caller': JSON.stringify({ subject: `${idp.issuer} ada`, scopes: ['mcp'], claims: {} }),
          },
          body: JSON.stringify(echo(4, 'forged')),
        });
        expect(forged.status).to.equal(404);
      } finally {
        await idp.close();
      }
    });
  }

  it('the deprecated HTTP+SSE transport: the stream on one replica, every POST to /messages on the next (SDK client)', async () => {
    const three = await replicas(3);
    let next = 0;
    const rotating = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = new URL(input instanceof Request ? input.url : input);
      return fetch(new URL(url.pathname + url.search, three[next++ % 3]!.url), init);
    };
    const client = new Client({ name: 'legacy-rotating', version: '1.0.0' });
    await client.connect(new SSEClientTransport(new URL(three[0]!.url.replace('/mcp', '/sse')), { fetch: rotating }));
    try {
      for (let i = 0; i < 4; i++) {
        expect(await client.callTool({ name: 'echo', arguments: { message: `sse ${i}` } })).to.deep.include({
          content: [{ type: 'text', text: `Echo: sse ${i}` }],
        });
      }
    } finally {
      await client.close();
    }
    expect(next).to.be.at.least(6);
    expect(three.filter((r) => /started over the legacy SSE transport/.test(r.stderr()))).to.have.length(1);
  });

  it('resumes a stream cut on one replica from a third, with Last-Event-ID: every event once, then the live rest', async () => {
    const [a, b, c] = await replicas(3);
    const id = await session(a!.url, b!.url);
    const call = {
      jsonrpc: '2.0',
      id: 5,
      method: 'tools/call',
      params: { name: 'trigger-long-running-operation', arguments: { duration: 1.2, steps: 4 }, _meta: { progressToken: 'tok' } },
    };
    const first = await openStream(b!.url, { method: 'POST', headers: { ...MCP_HEADERS, 'mcp-session-id': id }, body: JSON.stringify(call) });
    expect(first.status).to.equal(200);
    await first.until(2);
    first.drop();
    const last = first.events.at(-1)!.id!;
    const rest = await openStream(c!.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': id, 'last-event-id': last } });
    expect(rest.status).to.equal(200);
    await rest.ended;
    const events = [...first.events.slice(1), ...rest.events];
    const messages = events.map((e) => JSON.parse(e.data) as { method?: string; id?: number; params?: { progress?: number } });
    expect(messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params!.progress)).to.deep.equal([1, 2, 3, 4]);
    expect(messages.filter((m) => m.id === 5)).to.have.length(1);
    expect(messages.at(-1)).to.deep.include({ id: 5 });
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('an owner killed with SIGKILL: its sessions are 404 on the others within 10 s, a request in flight ends, other sessions go on', async () => {
    const [a, b, c] = await replicas(3);
    const doomed = await session(a!.url, b!.url);
    const kept = await session(b!.url, c!.url);
    const long = {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 2 } },
    };
    const inFlight = await openStream(c!.url, { method: 'POST', headers: { ...MCP_HEADERS, 'mcp-session-id': doomed }, body: JSON.stringify(long) });
    expect(inFlight.status).to.equal(200);
    const killed = Date.now();
    a!.proc.kill('SIGKILL');
    await a!.exited;
    await inFlight.ended;
    expect(Date.now() - killed).to.be.below(10_000);
    for (const r of [b!, c!]) {
      await within(10_000 - (Date.now() - killed), 'a 404 for the dead replica’s session', async () => {
        const answer = await post(r.url, doomed, echo(4, 'x'));
        return answer.status === 404 ? answer : undefined;
      });
    }
    const alive = await post(c!.url, kept, echo(5, 'still here'));
    expect(alive.status).to.equal(200);
    expect(alive.body).to.include('Echo: still here');
  });

  for (const direct of [false, true]) {
    it(`a Redis restart under load: no call refused (503, 404) ran, every call that ran was answered or said it may have run (502), none ran twice${direct ? ' (--advertise-url)' : ''}`, async function () {
      this.timeout(60_000);
      const own = open.add(await startRedis());
      const ledger = join(tempDir('ledger-'), 'ran');
      writeFileSync(ledger, '');
      const args = (port: number) => [
        '--port',
        String(port),
        '-e',
        `LEDGER=${ledger}`,
        ...(direct ? ['--advertise-url', `http://127.0.0.1:${port}`] : []),
      ];
      const three = await Promise.all(
        [0, 1, 2].map(async () =>
          open.add(await replica(own.url, args(await freePort()), undefined, [process.execPath, `${ROOT}dist/test/helpers/servers/ledger.js`])),
        ),
      );
      const sessions = await Promise.all([0, 1, 2, 3].map((i) => session(three[i % 3]!.url)));
      // Four clients, one session each, every call to the next replica (two in three carried to the owner).
      const heard = new Map<number, { status: number; body: string }>();
      let n = 0;
      let running = true;
      const client = async (id: string, first: number): Promise<void> => {
        for (let turn = first; running; turn++) {
          const mine = ++n;
          const answer = await post(three[turn % 3]!.url, id, {
            jsonrpc: '2.0',
            id: mine,
            method: 'tools/call',
            params: { name: 'note', arguments: { n: mine } },
          });
          heard.set(mine, { status: answer.status, body: answer.body });
          if (answer.status !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const load = Promise.all(sessions.map((id, i) => client(id, i)));
      await new Promise((resolve) => setTimeout(resolve, 700));
      await own.stop();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await own.start();
      // Until every session answers through every replica again, then a little more load.
      let pings = 0;
      await within(15_000, 'every session reached through every replica', async () => {
        // Pings with ids of their own (negative: the calls count up), as one session's requests in flight must have.
        const answers = await Promise.all(
          sessions.flatMap((id) => three.map((r) => post(r.url, id, { jsonrpc: '2.0', id: --pings, method: 'ping' }))),
        );
        return answers.every((a) => a.status === 200) ? true : undefined;
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      running = false;
      await load;
      // A request Redis took before it went away may still reach its owner: give it the time to.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const ran = readFileSync(ledger, 'utf8').split('\n').filter(Boolean).map(Number);
      const once = new Set(ran);
      expect(ran.length, 'a call ran twice').to.equal(once.size);
      const statuses = new Map<number, number>();
      for (const [mine, { status, body }] of heard) {
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 200) {
          expect(once.has(mine), `call ${mine} answered but not run`).to.equal(true);
          expect(body).to.include(`noted ${mine}`);
        } else if (status === 502) expect(body, `call ${mine}`).to.include('may have run');
        else expect(once.has(mine), `call ${mine} ran, yet its client heard ${status}: ${body}`).to.equal(false);
      }
      for (const mine of once) expect(heard.has(mine), `call ${mine} ran unasked`).to.equal(true);
      const summary = JSON.stringify([...statuses]);
      if (process.env.RESTART_FIGURES) console.log(summary);
      expect(statuses.get(200) ?? 0, summary).to.be.above(100);
      // Through the tunnel the restart is felt (refusals, each of a call that did not run). Forwarded over HTTP, a
      // session whose owner and address a replica knows already needs no Redis: no call failed in the runs here,
      // but the peer key is made anew in the emptied store and a replica that meets the new one before its owner
      // has read it goes through the tunnel, which may still be reconnecting: at most one call in a hundred.
      if (direct) expect(heard.size - (statuses.get(200) ?? 0), summary).to.be.at.most(heard.size / 100);
      else
        expect(
          [...statuses.keys()].some((status) => status !== 200),
          summary,
        ).to.equal(true);
    });
  }

  it('an owner stopped with SIGTERM says so at once: its sessions are 404 on the others straight away', async () => {
    const [a, b] = await replicas(2);
    const id = await session(a!.url, b!.url);
    a!.proc.kill('SIGTERM');
    expect(await a!.exited).to.equal(0);
    const answer = await post(b!.url, id, echo(2, 'x'));
    expect(answer.status).to.equal(404);
  });

  it('on a Redis with a password, over TLS (rediss://, its certificate trusted through NODE_EXTRA_CA_CERTS): sessions carried between replicas, the password in no log line', async () => {
    const secured = open.add(await startRedis({ password: 'hunter2-ünï', tls: true }));
    expect(secured.url).to.match(/^rediss:\/\/:hunter2-/);
    const env = { ...process.env, NODE_EXTRA_CA_CERTS: secured.caFile!, MCP_FRAME_STORE: secured.url };
    const [a, b] = await Promise.all([0, 1].map(() => replica(undefined, ['--store-env', 'MCP_FRAME_STORE'], env).then((r) => open.add(r))));
    const id = await session(a!.url, b!.url);
    const answer = await post(b!.url, id, echo(2, 'over TLS ✓'));
    expect(answer.status, answer.body).to.equal(200);
    expect(answer.body).to.include('Echo: over TLS ✓');
    // What the replicas say of the store names it without its password.
    await secured.stop();
    for (const r of [a!, b!]) {
      await within(5000, 'the store said unreachable', async () =>
        r.stderr().includes(`store rediss://localhost:${secured.port} is unreachable`) ? true : undefined,
      );
      expect(r.stderr()).to.not.include('hunter2');
    }
  });

  it('counts --max-sessions across the replicas, and makes room when a session ends on another', async () => {
    const [a, b, c] = await replicas(3, ['--max-sessions', '2']);
    const first = await session(a!.url);
    await session(b!.url);
    const refused = await post(c!.url, undefined, INIT);
    expect(refused.status).to.equal(503);
    expect(refused.body).to.include('2 sessions are open already across the replicas');
    expect((await rawRequest(c!.url, { method: 'DELETE', headers: { 'mcp-session-id': first } })).status).to.equal(200);
    await session(c!.url);
  });

  it('Redis stopped: new sessions get 503 naming the store, /healthz too, nothing crashes; all comes back with Redis', async () => {
    const [a, b] = await replicas(2);
    const id = await session(a!.url, b!.url);
    const health = (r: Replica) => rawRequest(r.url.replace('/mcp', '/healthz'));
    expect((await health(b!)).status).to.equal(200);
    await redis.stop();
    const refused = await within(5000, 'a 503 while Redis is down', async () => {
      const answer = await post(b!.url, undefined, INIT);
      return answer.status === 503 ? answer : undefined;
    });
    expect(refused.body).to.include(`the session store redis://127.0.0.1:${redis.port}`);
    const down = await health(b!);
    expect(down.status).to.equal(503);
    expect(down.body).to.include('session store');
    // The owner still answers its own session.
    expect((await post(a!.url, id, echo(2, 'local'))).body).to.include('Echo: local');
    await redis.start();
    await within(10_000, '/healthz 200 once Redis is back', async () => ((await health(b!)).status === 200 ? true : undefined));
    // The owner registers its session again in the empty store: the other replica reaches it.
    const through = await within(10_000, 'the session reached through the other replica', async () => {
      const answer = await post(b!.url, id, echo(3, 'again'));
      return answer.status === 200 ? answer : undefined;
    });
    expect(through.body).to.include('Echo: again');
    await session(b!.url, a!.url);
    expect(a!.proc.exitCode).to.equal(null);
    expect(b!.proc.exitCode).to.equal(null);
  });

  /** After FAILOVER on a primary and its standby, both of `server`: the replicas follow the primary ROLE names. */
  const followsFailover = (server: RedisKind) => async () => {
    const [primary, standby] = [open.add(await startRedis({ server })), open.add(await startRedis({ server }))];
    expect(await redisCommand(standby.port, ['REPLICAOF', '127.0.0.1', String(primary.port)])).to.equal('+OK');
    const synced = async (): Promise<true | undefined> => {
      const info = execFileSync(`${server}-cli`, ['-p', String(standby.port), 'INFO', 'replication'], { encoding: 'utf8' });
      return info.includes('master_link_status:up') ? true : undefined;
    };
    await within(8000, 'the standby in sync', synced);
    const [a, b] = await Promise.all([replica(primary.url), replica(primary.url)].map((r) => r.then((x) => open.add(x))));
    const before = await session(a!.url, b!.url);
    expect(await redisCommand(primary.port, ['FAILOVER'])).to.equal('+OK');
    await within(8000, 'the old primary a replica', async () => ((await roleOf(primary.port)) === 'slave' ? true : undefined));
    for (const r of [a!, b!]) {
      await within(8000, 'the replica following the new primary', async () =>
        r.stderr().includes(`is a replica now: following its primary, redis://127.0.0.1:${standby.port}`) ? true : undefined,
      );
    }
    // The session opened before goes on through the other replica; a new one is admitted, on the new primary.
    expect((await post(b!.url, before, echo(2, 'after the failover'))).body).to.include('Echo: after the failover');
    const after = await session(b!.url, a!.url);
    expect(await redisCommand(standby.port, ['EXISTS', `{mcp-frame}:session:${after}`])).to.equal(':1');
    for (const r of [a!, b!]) expect((await rawRequest(r.url.replace('/mcp', '/healthz'))).status).to.equal(200);
  };

  it(
    'after FAILOVER (the primary it was given turned replica, READONLY), serve follows the primary its ROLE names: sessions go on, new ones are admitted there',
    followsFailover('redis'),
  );

  /** Sentinel over a primary and a replica of `server`: sessions go on across a failover, even for a fixed address. */
  const throughSentinel = (server: RedisKind) => async () => {
    const set = await startSentinelSet(server);
    try {
      const [a, b] = await Promise.all([replica(set.url), replica(set.url)].map((r) => r.then((x) => open.add(x))));
      // Beside them, one given the primary's own address, as before Sentinel was spoken: it follows by ROLE.
      const fixed = open.add(await replica(`redis://127.0.0.1:${set.primary.port}`));
      const id = await session(a!.url, b!.url);
      expect((await set.failover()).startsWith('+OK'), 'SENTINEL FAILOVER').to.equal(true);
      // The replica is the primary now; the old primary its replica.
      await within(20_000, 'the old replica promoted', async () => ((await roleOf(set.replica.port)) === 'master' ? true : undefined));
      const fresh = await within(20_000, 'a session admitted after the failover', async () => {
        const answer = await post(b!.url, undefined, INIT);
        return answer.status === 200 ? answer : undefined;
      });
      expect(fresh.status).to.equal(200);
      // The session opened before the failover is still reached through the other replica.
      const through = await within(10_000, 'the old session through the other replica', async () => {
        const answer = await post(b!.url, id, echo(5, 'after failover'));
        return answer.status === 200 ? answer : undefined;
      });
      expect(through.body).to.include('Echo: after failover');
      expect((await rawRequest(a!.url.replace('/mcp', '/healthz'))).status).to.equal(200);
      // Sentinel turns the old primary into a replica once it sees it claim the old role (its checks come every
      // 10 s): from then on a replica given its address is refused writes, and follows the primary it names.
      await within(30_000, 'the fixed-address replica following the new primary', async () =>
        fixed.stderr().includes(`is a replica now: following its primary, redis://127.0.0.1:${set.replica.port}`) ? true : undefined,
      );
      expect((await rawRequest(fixed.url.replace('/mcp', '/healthz'))).status).to.equal(200);
      expect((await post(fixed.url, undefined, INIT)).status).to.equal(200);
    } finally {
      await set.close();
    }
  };

  it(
    'through Sentinel (redis+sentinel://): sessions go on across a failover, and new ones are admitted on the new primary',
    throughSentinel('redis'),
  );

  /** A Cluster of three `server` nodes, one given: sessions carried, --max-sessions counted, every key in one slot. */
  const onCluster = (server: RedisKind) => async () => {
    const cluster = await startCluster(3, server);
    try {
      const [a, b] = await Promise.all(
        [replica(cluster.url, ['--max-sessions', '2']), replica(cluster.url, ['--max-sessions', '2'])].map((r) => r.then((x) => open.add(x))),
      );
      expect((await rawRequest(a!.url.replace('/mcp', '/healthz'))).status).to.equal(200);
      const id = await session(a!.url, b!.url);
      // Carried from b to its owner a through the sharded channel, and back.
      const through = await post(b!.url, id, echo(2, 'through the cluster'));
      expect(through.status, through.body).to.equal(200);
      expect(through.body).to.include('Echo: through the cluster');
      await session(b!.url);
      const refused = await post(a!.url, undefined, INIT);
      expect(refused.status).to.equal(503);
      expect(refused.body).to.include('2 sessions are open already across the replicas');
      expect((await rawRequest(b!.url, { method: 'DELETE', headers: { 'mcp-session-id': id } })).status).to.equal(200);
      await session(a!.url);
      // Every key the service wrote is on one node (one slot: the prefix is a hash tag), none on the others.
      const counts = await Promise.all(cluster.ports.map((port) => redisCommand(port, ['DBSIZE'])));
      expect(
        counts.filter((c) => c !== ':0'),
        counts.join(' '),
      ).to.have.length(1);
      expect(await redisCommand(cluster.ports[0]!, ['CLUSTER', 'KEYSLOT', '{mcp-frame}:replicas'])).to.equal(
        await redisCommand(cluster.ports[0]!, ['CLUSTER', 'KEYSLOT', 'mcp-frame']),
      );
    } finally {
      await cluster.close();
    }
  };

  it(
    'on a Redis Cluster (redis+cluster://, one node given): sessions carried between replicas, --max-sessions counted, every key in one slot',
    onCluster('redis'),
  );

  it('a replica started while Redis is down listens, says 503 on /healthz, and takes sessions once Redis answers', async () => {
    await redis.stop();
    const started = Date.now();
    const [a] = await replicas(1);
    expect(Date.now() - started).to.be.below(10_000);
    const healthz = a!.url.replace('/mcp', '/healthz');
    const down = await rawRequest(healthz);
    expect(down.status).to.equal(503);
    expect(JSON.parse(down.body).reason).to.include(`the session store redis://127.0.0.1:${redis.port} is unreachable`);
    expect((await post(a!.url, undefined, INIT)).status).to.equal(503);
    await redis.start();
    await within(10_000, '/healthz 200 once Redis answers', async () => ((await rawRequest(healthz)).status === 200 ? true : undefined));
    await session(a!.url);
  });

  for (const direct of [false, true]) {
    it(`modern-era requests go to whichever replica gets them; an input_required retry is carried to the replica that asked (SDK 2.x, rotating${direct ? '; over HTTP with --advertise-url' : ''})`, async () => {
      const before = publishes();
      const [a, b] = direct ? await directReplicas(2) : await replicas(2);
      // Rotating, except that a retry (it carries requestState) goes to the replica the call did not: the one that
      // did not ask.
      let next = 0;
      const calls: number[] = [];
      const rotating = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
        const body = typeof init?.body === 'string' ? init.body : '';
        let i = next++ % 2;
        if (body.includes('"requestState"')) i = 1 - calls[0]!;
        if (body.includes('"tools/call"')) calls.push(i);
        const url = new URL(input instanceof Request ? input.url : input);
        return fetch(new URL(url.pathname + url.search, [a!, b!][i]!.url), init);
      };
      const client = new Client2(
        { name: 'sdk2-rotating', version: '1.0.0' },
        { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } },
      );
      const asked: string[] = [];
      client.setRequestHandler('elicitation/create', async (request) => {
        asked.push((request.params as { message: string }).message);
        return { action: 'accept', content: FILLED_FORM };
      });
      await client.connect(new Transport2(new URL(a!.url), { fetch: rotating }));
      try {
        const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
        expect(JSON.stringify(elicited.content)).to.include('Ada');
        expect(asked).to.have.length(1);
        expect(calls).to.have.length(2);
        expect(calls[1]).to.not.equal(calls[0]);
      } finally {
        await client.close();
      }
      // The first modern client (its capabilities) shaped each replica's child: elicitation tools are there for it.
      for (const r of [a!, b!]) {
        const c = await connect({ type: 'http', url: r.url });
        try {
          expect(c.protocolVersion).to.equal('2026-07-28');
          expect(await c.request('tools/call', { name: 'echo', arguments: { message: 'modern' } })).to.deep.include({
            content: [{ type: 'text', text: 'Echo: modern' }],
          });
        } finally {
          await c.close();
        }
      }
      // The retry crossed to the replica that asked: through Redis, or with addresses over HTTP only.
      if (direct) expect(publishes() - before).to.equal(0);
      else expect(publishes() - before).to.be.above(0);
    });
  }

  // Valkey speaks Redis's protocol and commands (the store's Lua scripts, SET ... GET, SPUBLISH); the same cases
  // against Debian's valkey-server (bookworm-backports) show it.
  describe('on Valkey', () => {
    let valkey: RedisServer;
    before(async function () {
      if (!requireRedis(this, 'valkey')) return;
      valkey = await startRedis({ server: 'valkey' });
    });
    after(() => valkey?.close());

    it('the SDK client rotating over three replicas, carried through the tunnel, and --max-sessions counted across them', async () => {
      const three = await Promise.all(Array.from({ length: 3 }, () => replica(valkey.url, ['--max-sessions', '2']).then((r) => open.add(r))));
      expect(execFileSync('valkey-cli', ['-p', String(valkey.port), 'INFO', 'server'], { encoding: 'utf8' })).to.include('valkey_version:');
      await rotatingSession(three);
      expect(publishes(valkey, 'valkey')).to.be.above(0);
      await session(three[0]!.url, three[1]!.url);
      await session(three[1]!.url);
      const refused = await post(three[2]!.url, undefined, INIT);
      expect(refused.status).to.equal(503);
      expect(refused.body).to.include('2 sessions are open already across the replicas');
    });

    it('after FAILOVER, serve follows the primary ROLE names', followsFailover('valkey'));
    it('through Sentinel (valkey-sentinel mode): sessions go on across a failover', throughSentinel('valkey'));
    it('on a Valkey Cluster: sessions carried between replicas, --max-sessions counted, every key in one slot', onCluster('valkey'));
  });

  // The store on its own: what it counts after a session ends, with Redis answering and with the link to it cut.
  describe('the Redis store', () => {
    let prefixes = 0;
    const store = (url = redis.url): Promise<RedisStore> => redisStore(url, `store-test-${++prefixes}`, QUIET).then((s) => open.add(s));
    /** Another replica on the last store's prefix, straight to Redis. */
    const twin = (): Promise<RedisStore> => redisStore(redis.url, `store-test-${prefixes}`, QUIET).then((s) => open.add(s));

    /** A Redis of the test's own (to pause or stop), and two replicas' stores on one prefix there. */
    async function ownRedis(server: RedisKind = 'redis'): Promise<{ redis: RedisServer; prefix: string; stores: [RedisStore, RedisStore] }> {
      const own = open.add(await startRedis({ server }));
      const prefix = `store-test-${++prefixes}`;
      const one = () => redisStore(own.url, prefix, QUIET).then((s) => open.add(s));
      return { redis: own, prefix, stores: [await one(), await one()] };
    }

    /** An HTTP front that carries every request to `owner` through `front`, and answers a failure with its name (599). */
    async function carrier(front: RedisStore, owner: RedisStore): Promise<string> {
      const server = http.createServer(async (req, res) => {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        try {
          if (!(await front.forward(owner.replica, tunnelRequest(req, Buffer.concat(chunks).toString('utf8')), res))) res.writeHead(404).end();
        } catch (err) {
          res.writeHead(599).end((err as Error).name);
        }
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      open.add({
        close: () => {
          server.closeAllConnections();
          return new Promise<void>((resolve) => server.close(() => resolve()));
        },
      });
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    }

    /**
     * A front replica's HTTP server that carries every request to `owner` (as serve does for a session owned
     * there), and the owner's handler for what it is carried.
     */
    async function tunnel(handler: (request: TunnelRequest, res: TunnelResponse) => void, front?: RedisStore, owner?: RedisStore) {
      const a = front ?? (await store());
      const b = owner ?? (await twin());
      b.onForwarded(handler);
      return { url: await carrier(a, b), front: a, owner: b };
    }

    /** Writes 64 KiB pieces as a session's stream does, waiting for 'drain' when told to, up to `total` bytes. */
    function writeHonouringDrain(res: TunnelResponse, total: number, written: { bytes: number }): void {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const piece = 'x'.repeat(64 * 1024);
      const more = (): void => {
        while (written.bytes < total) {
          written.bytes += piece.length;
          if (!res.write(piece)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    }

    it('gives a carried response flow control: a client that does not read stops its owner within a few MiB, then gets it all', async () => {
      const written = { bytes: 0 };
      const total = 96 * 1024 * 1024;
      const { url } = await tunnel((_request, res) => writeHonouringDrain(res, total, written));
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.request(url, { method: 'POST', agent: false }, (r) => {
          r.pause();
          resolve(r);
        });
        req.on('error', reject);
        req.end('{}');
      });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      // Without flow control the owner writes all 96 MiB into the tunnel at once; with it, the window and the sockets' buffers.
      expect(written.bytes).to.be.below(32 * 1024 * 1024);
      const paused = written.bytes;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(written.bytes).to.equal(paused);
      let received = 0;
      for await (const chunk of res) received += (chunk as Buffer).length;
      expect(received).to.equal(total);
    });

    it('carries an answer larger than Redis allows one subscriber (40 MiB, multibyte), in pieces, and the tunnel goes on working', async () => {
      const big = `${'ü'.repeat(10 * 1024 * 1024)}😀${'a'.repeat(20 * 1024 * 1024)}`;
      const { url } = await tunnel((request, res) => {
        if (request.body === 'small') return void res.writeHead(200).end('small answer');
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(big);
      });
      const answer = await rawRequest(url, { method: 'POST', body: 'big' });
      expect(answer.status).to.equal(200);
      expect(answer.body.length).to.equal(big.length);
      expect(answer.body === big).to.equal(true);
      // The subscriber of the front was not dropped: another carried request is answered at once.
      const after = await rawRequest(url, { method: 'POST', body: 'small' });
      expect(after.body).to.equal('small answer');
    });

    it('carries a request body larger than one message should be (3 MiB) to its owner whole', async () => {
      const body = `${'é'.repeat(1024 * 1024)}${'z'.repeat(2 * 1024 * 1024)}`;
      const { url } = await tunnel((request, res) => void res.writeHead(200).end(`${request.body.length} ${request.body === body}`));
      expect((await rawRequest(url, { method: 'POST', body })).body).to.equal(`${body.length} true`);
    });

    it('ends a carried request whose answer the owner could not publish during an outage, once Redis answers again (502, may have run)', async () => {
      const link = open.add(await cutProxy(redis.port));
      const front = await store();
      const owner = await redisStore(`redis://127.0.0.1:${link.port}`, `store-test-${prefixes}`, QUIET).then((s) => open.add(s));
      let ran = 0;
      const { url } = await tunnel(
        (_request, res) => {
          ran++;
          setTimeout(() => res.writeHead(200).end('{"jsonrpc":"2.0","id":1,"result":{}}'), 300);
        },
        front,
        owner,
      );
      const answer = rawRequest(url, { method: 'POST', body: '{}' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      link.refusing = true;
      link.cut();
      // Back well within ALIVE_MS: the owner never counts as dead, so only the owner's word ends the request.
      setTimeout(() => (link.refusing = false), 1500);
      const started = Date.now();
      const got = await answer;
      expect(got.status).to.equal(502);
      expect(JSON.parse(got.body).error.message).to.match(/lost between replicas .*may have run/);
      expect(Date.now() - started).to.be.below(ALIVE_MS);
      expect(ran).to.equal(1);
    });

    it("ends a carried request whose answer came while the front's subscriber was away, when it is back (502, may have run)", async () => {
      const link = open.add(await cutProxy(redis.port));
      const front = await redisStore(`redis://127.0.0.1:${link.port}`, `store-test-${++prefixes}`, QUIET).then((s) => open.add(s));
      const owner = await twin();
      const { url } = await tunnel((_request, res) => void setTimeout(() => res.writeHead(200).end('{}'), 400), front, owner);
      const answer = rawRequest(url, { method: 'POST', body: '{}' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      link.refusing = true;
      link.cut();
      setTimeout(() => (link.refusing = false), 1200);
      const got = await answer;
      expect(got.status).to.equal(502);
      expect(JSON.parse(got.body).error.message).to.match(/may have run/);
    });

    it('a released session no longer counts once release() resolves, on this replica and on another', async () => {
      const a = await store();
      const other = await twin();
      expect(await a.admit('one', 1)).to.equal(undefined);
      expect(await other.admit('two', 1)).to.equal(1);
      await a.release('one');
      // Sent at once after release() resolves, on the same connection and on another: the room is free for both.
      expect(await a.admit('again', 1)).to.equal(undefined);
      await a.release('again');
      expect(await other.admit('two', 1)).to.equal(undefined);
      expect(await a.ownerOf('one')).to.equal(undefined);
      expect(await a.ownerOf('two')).to.equal(other.replica);
    });

    it('releasing a session twice, or one it never admitted, resolves and frees nothing else', async () => {
      const a = await store();
      expect(await a.admit('one', 2)).to.equal(undefined);
      expect(await a.admit('two', 2)).to.equal(undefined);
      await Promise.all([a.release('one'), a.release('one')]);
      await a.release('one');
      await a.release('never');
      expect(await a.admit('three', 2)).to.equal(undefined);
      expect(await a.admit('four', 2)).to.equal(2);
    });

    /** A stall (SIGSTOP) of a `server` past the liveness time, during an open, a release and the heartbeats. */
    const stall = (server: RedisKind) =>
      async function (this: Mocha.Context) {
        this.timeout(30_000);
        if (!requireRedis(this, server)) return;
        const { redis: paused, prefix, stores } = await ownRedis(server);
        const [a, b] = stores;
        expect(await a.admit('kept', 3)).to.equal(undefined);
        expect(await a.admit('ended', 3)).to.equal(undefined);
        const stalled = Date.now();
        paused.pause();
        // A session that ends during the stall: its release waits in Redis, and is told again at a later beat.
        const released = a.release('ended');
        // The open that comes during the stall is refused (its client gets 503) and /healthz says why.
        const refused = await a.admit('phantom', 3).then(
          () => 'admitted',
          (err: Error) => err.message,
        );
        expect(refused).to.match(/did not answer within/);
        expect(a.problem()).to.match(/stalls/);
        await released;
        // Long enough for every replica's liveness key to lapse: once Redis goes on, the first script to run (the
        // refused admission, still queued) takes both replicas for dead and sweeps their sessions.
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, ALIVE_MS + 500 - (Date.now() - stalled))));
        paused.resume();
        await within(10_000, 'the kept session registered again, the phantom gone', async () => {
          const owner = await b.ownerOf('kept').catch(() => undefined);
          const left = await redisCommand(paused.port, ['EXISTS', `{${prefix}}:session:phantom`, `{${prefix}}:session:ended`]);
          return owner === a.replica && left === ':0' ? true : undefined;
        });
        expect(a.problem()).to.equal(undefined);
        // One session counts (kept), not three: neither the phantom nor the ended one holds a place under the limit.
        expect(await b.admit('two', 2)).to.equal(undefined);
        expect(await b.admit('three', 2)).to.equal(2);
      };

    it(
      'a Redis stall past the liveness time: no phantom of an open refused meanwhile, a session released meanwhile gone, and the sessions swept as dead registered again',
      stall('redis'),
    );
    it('the same stall of a Valkey server: no phantom, the released session gone, the swept sessions registered again', stall('valkey'));

    it('a request carried while Redis stalls may have run (MayHaveRun: 502), and does reach its owner after; one carried while Redis is away did not (503)', async function () {
      this.timeout(30_000);
      const {
        redis: redis2,
        stores: [front, owner],
      } = await ownRedis();
      const got: string[] = [];
      owner.onForwarded((request, res) => {
        got.push(request.body);
        res.writeHead(200).end('{}');
      });
      const url = await carrier(front, owner);
      expect((await rawRequest(url, { method: 'POST', body: 'before' })).status).to.equal(200);
      redis2.pause();
      const during = await rawRequest(url, { method: 'POST', body: 'during the stall' });
      expect([during.status, during.body]).to.deep.equal([599, 'MayHaveRun']);
      redis2.resume();
      // It did reach the owner once Redis went on: a retry on a 503 would have run it twice.
      await within(5000, 'the stalled request at its owner', async () => (got.includes('during the stall') ? true : undefined));
      await redis2.stop();
      await within(5000, 'the store seen as gone', async () => (front.problem() !== undefined ? true : undefined));
      const away = await rawRequest(url, { method: 'POST', body: 'while away' });
      expect([away.status, away.body]).to.deep.equal([599, 'StoreUnavailable']);
      expect(got).to.deep.equal(['before', 'during the stall']);
    });

    it('an owner that stops with a carried request: a POST gets 502 saying it may have run, a GET stream 404', async () => {
      const front = await store();
      const owner = await twin();
      const held: TunnelResponse[] = [];
      owner.onForwarded((_request, res) => void held.push(res));
      const url = await carrier(front, owner);
      const posted = rawRequest(url, { method: 'POST', body: '{}' });
      const listening = rawRequest(url, { method: 'GET' });
      await within(5000, 'both requests at the owner', async () => (held.length === 2 ? true : undefined));
      // Its liveness key removed at once (as a replica that stops says), its requests never answered.
      await owner.close();
      const [post, get] = await Promise.all([posted, listening]);
      expect(post.status).to.equal(502);
      expect(JSON.parse(post.body).error.message).to.match(/it may have run/);
      expect(get.status).to.equal(404);
    });

    it('a store whose node became a replica of a primary it cannot reach: READONLY said (/healthz 503), no session admitted, all back once the node takes writes', async () => {
      const {
        redis: node,
        stores: [a],
      } = await ownRedis();
      expect(await a.admit('one', 5)).to.equal(undefined);
      const nowhere = await freePort();
      expect(await redisCommand(node.port, ['REPLICAOF', '127.0.0.1', String(nowhere)])).to.equal('+OK');
      await within(8000, 'READONLY said', async () => (/takes no writes \(READONLY/.test(a.problem() ?? '') ? true : undefined));
      expect(
        await a.admit('two', 5).then(
          () => 'admitted',
          (err: Error) => err.message,
        ),
      ).to.match(/READONLY/);
      expect(await redisCommand(node.port, ['REPLICAOF', 'NO', 'ONE'])).to.equal('+OK');
      await within(8000, 'writes taken again', async () => (a.problem() === undefined ? true : undefined));
      expect(await a.admit('three', 5)).to.equal(undefined);
      expect(await a.ownerOf('one')).to.equal(a.replica);
    });

    it('a session that ends while the store is out of reach stops counting once the store answers again', async () => {
      const link = open.add(await cutProxy(redis.port));
      const a = await store(`redis://127.0.0.1:${link.port}`);
      const other = await twin();
      expect(await a.admit('one', 1)).to.equal(undefined);
      const cut = Date.now();
      link.refusing = true;
      link.cut();
      await within(5000, 'the store seen as unreachable', async () => (a.problem() !== undefined ? true : undefined));
      await a.release('one');
      // Redis kept its data: the session still counts there while the replica cannot say it ended.
      expect(await other.admit('two', 1)).to.equal(1);
      link.refusing = false;
      await within(10_000, 'the room free on another replica', async () => ((await other.admit('two', 1)) === undefined ? true : undefined));
      expect(await other.ownerOf('one')).to.equal(undefined);
      // Freed by the replica itself, not because the others took it for dead (no beat for ALIVE_MS).
      expect(Date.now() - cut).to.be.below(ALIVE_MS);
      expect(await a.admit('x', 2)).to.equal(undefined);
      expect(await other.ownerOf('x')).to.equal(a.replica);
    });
  });
});
