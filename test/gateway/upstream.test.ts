import { expect } from 'chai';
import { connectOver, RpcError } from '../../lib/client/connection.js';
import { Upstream, UpstreamHealth, type UpstreamOpener, type UpstreamOptions } from '../../lib/gateway/upstream.js';
import { createLogger } from '../../lib/log.js';
import { CODES } from '../../lib/protocol/codes.js';
import { type Asked, scriptedChannel } from '../helpers/memory-server.js';
import { rejection } from '../helpers/rejection.js';
import { within } from '../helpers/poll.js';

const ENTRY = { command: 'unused' };

function options(opener: UpstreamOpener, extra: Partial<UpstreamOptions> = {}): UpstreamOptions & { lines: string[] } {
  const lines: string[] = [];
  return {
    opener,
    capabilities: () => ({ roots: {} }),
    setup: () => undefined,
    maxPending: 8,
    health: undefined,
    log: createLogger({ write: (l) => lines.push(l), level: 'debug' }),
    lines,
    ...extra,
  };
}

describe('gateway/upstream: one server behind the gateway', () => {
  const ups: Upstream[] = [];
  afterEach(async () => {
    await Promise.all(ups.splice(0).map((u) => u.close()));
  });

  it('starts once for any number of callers, declares the capabilities, and is up with the server info', async () => {
    let opened = 0;
    const seen: Array<Record<string, unknown>> = [];
    const up = new Upstream('a', 0, ENTRY, {
      ...options(async (_name, _entry, { capabilities, onSpawn }) => {
        opened++;
        seen.push(capabilities);
        return connectOver(scriptedChannel((q) => q.answer({ tools: [] })).channel, { protocolVersion: '2025-06-18', capabilities, onSpawn });
      }),
    });
    ups.push(up);
    expect(up.state).to.equal('idle');
    const events: string[] = [];
    up.on('up', () => events.push('up'));
    await Promise.all([up.start(), up.start(), up.start()]);
    expect(opened).to.equal(1);
    expect(seen).to.deep.equal([{ roots: {} }]);
    expect(up.state).to.equal('up');
    expect(events).to.deep.equal(['up']);
    expect(up.info).to.deep.include({ serverInfo: { name: 'scripted', version: '1' } });
    expect(up.capabilities).to.deep.equal({ tools: {} });
    expect(await up.request('tools/list', {})).to.deep.equal({ tools: [] });
  });

  it('refuses requests while it is not up, naming the server and why, and never rejects start', async () => {
    const health = new UpstreamHealth(['a']);
    const settings = options(
      async () => {
        throw new Error('spawn ENOENT');
      },
      { health },
    );
    const up = new Upstream('a', 0, ENTRY, settings);
    ups.push(up);
    const starting = (await rejection(up.request('tools/list', {}))) as RpcError;
    expect(starting).to.be.instanceOf(RpcError);
    expect(starting.code).to.equal(CODES.serverError);
    expect(starting.message).to.equal('server "a" is not available: it is starting');
    const downs: string[] = [];
    up.on('down', (why: string) => downs.push(why));
    await up.start();
    expect(up.state).to.equal('down');
    expect(up.why).to.equal('it did not start: spawn ENOENT');
    expect(downs).to.deep.equal(['it did not start: spawn ENOENT']);
    expect(health.report()).to.deep.equal({ a: { state: 'down', reason: 'it did not start: spawn ENOENT' } });
    expect(health.down()).to.deep.equal(['a']);
    expect(settings.lines).to.deep.equal(['server "a" is down: it did not start: spawn ENOENT']);
    expect(((await rejection(up.request('tools/list', {}))) as Error).message).to.equal(
      'server "a" is not available: it did not start: spawn ENOENT',
    );
  });

  it('starts again after a failure (after half a second first), and is up then', async () => {
    let attempts = 0;
    const up = new Upstream(
      'a',
      0,
      ENTRY,
      options(async (_n, _e, { onSpawn }) => {
        if (++attempts === 1) throw new Error('not yet');
        return connectOver(scriptedChannel((q) => q.answer({})).channel, { protocolVersion: '2025-06-18', onSpawn });
      }),
    );
    ups.push(up);
    const began = Date.now();
    const restarted = new Promise((resolve) => up.once('up', resolve));
    await up.start();
    expect(up.state).to.equal('down');
    await restarted;
    expect(Date.now() - began).to.be.at.least(450);
    expect(up.state).to.equal('up');
    expect(up.why).to.equal(undefined);
  });

  it('refuses a request past maxPending at once, and takes one again when one ends', async () => {
    const held: Asked[] = [];
    const up = new Upstream(
      'slow',
      0,
      ENTRY,
      options(async (_n, _e, { onSpawn }) => connectOver(scriptedChannel((q) => held.push(q)).channel, { protocolVersion: '2025-06-18', onSpawn }), {
        maxPending: 2,
      }),
    );
    ups.push(up);
    await up.start();
    const first = up.request('tools/call', { name: 'x' });
    const second = up.request('tools/call', { name: 'y' });
    const third = (await rejection(up.request('tools/call', { name: 'z' }))) as RpcError;
    expect(third.message).to.equal('server "slow" has 2 requests in flight already');
    await within(2000, 'two calls at the server', () => (held.length >= 2 ? true : undefined), 1);
    held[0]!.answer({ content: [] });
    expect(await first).to.deep.equal({ content: [] });
    const fourth = up.request('ping', {});
    await within(2000, 'the third call at the server', () => (held.length >= 3 ? true : undefined), 1);
    expect(held[2]!.method).to.equal('ping');
    held[1]!.fail(-32602, 'no such tool');
    held[2]!.answer({});
    const err = (await rejection(second)) as RpcError;
    expect([err.code, err.message]).to.deep.equal([-32602, 'no such tool']);
    expect(await fourth).to.deep.equal({});
  });

  it('notes a problem for /healthz while it is up, and passes a notification on', async () => {
    const health = new UpstreamHealth(['a']);
    const server = scriptedChannel((q) => q.answer({}));
    const up = new Upstream(
      'a',
      0,
      ENTRY,
      options(async (_n, _e, { onSpawn }) => connectOver(server.channel, { protocolVersion: '2025-06-18', onSpawn }), { health }),
    );
    ups.push(up);
    await up.start();
    up.note('tools/list did not answer in 10000 ms');
    expect(health.report()).to.deep.equal({ a: { state: 'up', problem: 'tools/list did not answer in 10000 ms' } });
    up.note(undefined);
    expect(health.report()).to.deep.equal({ a: { state: 'up' } });
    up.notify('notifications/roots/list_changed');
    await within(
      2000,
      'the notification at the server',
      () => (server.notified.some((n) => n.method === 'notifications/roots/list_changed') ? true : undefined),
      1,
    );
  });
});
