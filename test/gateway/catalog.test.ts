import { expect } from 'chai';
import { connectOver } from '../../lib/client/connection.js';
import { Catalog } from '../../lib/gateway/catalog.js';
import { NameFilter, type PrefixMode } from '../../lib/gateway/names.js';
import { Upstream } from '../../lib/gateway/upstream.js';
import { createLogger } from '../../lib/log.js';
import { scriptedChannel } from '../helpers/memory-server.js';

type Json = Record<string, unknown>;

/** An upstream over an in-process server whose lists are `lists` (by method), started. */
async function started(
  name: string,
  index: number,
  lists: Record<string, Json[]>,
  asked: string[] = [],
  capabilities: Json = { tools: {}, prompts: {}, resources: {} },
): Promise<Upstream> {
  const up = new Upstream(
    name,
    index,
    { command: 'unused' },
    {
      opener: (_n, _e, { onSpawn }) =>
        connectOver(
          scriptedChannel((q) => {
            asked.push(`${name} ${q.method}`);
            const key = {
              'tools/list': 'tools',
              'prompts/list': 'prompts',
              'resources/list': 'resources',
              'resources/templates/list': 'resourceTemplates',
            }[q.method];
            q.answer(key === undefined ? {} : { [key]: lists[q.method] ?? [] });
          }, capabilities).channel,
          { protocolVersion: '2025-06-18', onSpawn },
        ),
      capabilities: () => ({}),
      setup: () => undefined,
      maxPending: 8,
      health: undefined,
      log: createLogger({ write: () => undefined }),
    },
  );
  await up.start();
  return up;
}

const tool = (name: string): Json => ({ name, inputSchema: { type: 'object' } });

describe('gateway/catalog: what a gateway knows of its servers lists, and the lists it answers with', () => {
  const ups: Upstream[] = [];
  afterEach(async () => {
    await Promise.all(ups.splice(0).map((u) => u.close()));
  });

  async function catalog(prefix: PrefixMode, asked: string[] = [], deny: string[] = []): Promise<Catalog> {
    ups.push(
      await started('a', 0, { 'tools/list': [tool('echo'), tool('add')], 'resources/list': [{ uri: 'file:///a', name: 'a' }] }, asked),
      await started(
        'b',
        1,
        { 'tools/list': [tool('echo'), tool('sum')], 'resources/templates/list': [{ uriTemplate: 'db://{table}', name: 't' }] },
        asked,
      ),
    );
    return new Catalog({
      ups,
      separator: '__',
      prefix,
      filters: { tools: new NameFilter([], deny), prompts: new NameFilter() },
      listTimeoutMs: 5000,
      log: createLogger({ write: () => undefined }),
    });
  }
  const names = (page: Json): string[] => (page.tools as Json[]).map((t) => t.name as string);
  const all = (): boolean => true;

  it("merges every server's page into one, prefixed, and resolves a name back to its server", async () => {
    const c = await catalog('always');
    expect(names(await c.list('tools', {}, all))).to.deep.equal(['a__echo', 'a__add', 'b__echo', 'b__sum']);
    expect((await c.resolve('tools', 'b__sum'))?.up.name).to.equal('b');
    expect((await c.resolve('tools', 'b__sum'))?.name).to.equal('sum');
    expect(await c.resolve('tools', 'c__sum')).to.equal(undefined);
  });

  it('with prefix conflicts, prefixes only the names two servers share (reading both lists whole first)', async () => {
    const asked: string[] = [];
    const c = await catalog('conflicts', asked, ['sum']);
    expect(names(await c.list('tools', {}, all))).to.deep.equal(['a__echo', 'add', 'b__echo']);
    expect(await c.resolve('tools', 'sum'), 'filtered out').to.equal(undefined);
    expect((await c.resolve('tools', 'add'))?.up.name).to.equal('a');
    expect(await c.clashes()).to.deep.equal(['tool echo (a, b)']);
    // One reading of each list, however often the names are needed.
    expect(asked.filter((a) => a.endsWith('tools/list')).length).to.be.at.most(4);
  });

  it('leaves out what the caller may not see, and pages on with its own cursors', async () => {
    const c = await catalog('always');
    const first = await c.list('tools', {}, (_k, exposed) => exposed.startsWith('b__'));
    expect(names(first)).to.deep.equal(['b__echo', 'b__sum']);
    await c.list('tools', { cursor: 'not-ours' }, all).then(
      () => expect.fail('a cursor the gateway did not give was taken'),
      (err: Error) => expect(err.message).to.match(/^Invalid cursor/),
    );
  });

  it('routes a URI to the server that listed it, or whose template matches it, and forgets a server that went down', async () => {
    const c = await catalog('always');
    await Promise.all([c.index('resources'), c.index('templates')]);
    expect(c.uriOwner('file:///a')?.name).to.equal('a');
    expect(c.uriOwner('db://users')?.name).to.equal('b');
    expect(c.templateOwner('db://users')?.name).to.equal('b');
    expect(c.uriOwner('file:///nowhere')).to.equal(undefined);
    c.upstreamChanged(ups[0]!, false);
    expect(c.uriOwner('file:///a')).to.equal(undefined);
  });

  it('keeps the pages of a server that says when its list changes, until it does, and of one that says nothing for 5 s', async () => {
    const asked: string[] = [];
    ups.push(
      await started('kept', 0, { 'tools/list': [tool('echo')] }, asked, { tools: { listChanged: true } }),
      await started('asked', 1, { 'tools/list': [tool('sum')] }, asked, { tools: {} }),
    );
    const c = new Catalog({
      ups,
      separator: '__',
      prefix: 'always',
      filters: { tools: new NameFilter(), prompts: new NameFilter() },
      listTimeoutMs: 5000,
      log: createLogger({ write: () => undefined }),
    });
    for (let i = 0; i < 3; i++) expect(names(await c.list('tools', {}, all))).to.deep.equal(['kept__echo', 'asked__sum']);
    const lists = (name: string): number => asked.filter((a) => a === `${name} tools/list`).length;
    expect([lists('kept'), lists('asked')]).to.deep.equal([1, 1]);
    c.listChanged(ups[0]!, 'notifications/tools/list_changed');
    await c.list('tools', {}, all);
    expect(lists('kept'), 'read again after its list changed').to.equal(2);
    c.upstreamChanged(ups[0]!, true);
    await c.list('tools', {}, all);
    expect(lists('kept'), 'and after it restarted').to.equal(3);
    // 5 s on, the list of the server that said nothing is read again; the other's is not.
    const now = Date.now;
    Date.now = () => now() + 5001;
    try {
      await c.list('tools', {}, all);
    } finally {
      Date.now = now;
    }
    expect([lists('kept'), lists('asked')]).to.deep.equal([3, 2]);
  });

  it('resolves names by an index under prefix conflicts, made again when a server renames a tool and not before', async () => {
    const asked: string[] = [];
    const bLists = { 'tools/list': [tool('echo'), tool('sum')] };
    ups.push(await started('a', 0, { 'tools/list': [tool('echo')] }, asked), await started('b', 1, bLists, asked));
    const lines: string[] = [];
    const c = new Catalog({
      ups,
      separator: '__',
      prefix: 'conflicts',
      filters: { tools: new NameFilter(), prompts: new NameFilter() },
      listTimeoutMs: 5000,
      log: createLogger({ write: (line) => void lines.push(line) }),
    });
    expect(await c.resolve('tools', 'sum')).to.deep.include({ name: 'sum' });
    expect((await c.resolve('tools', 'b__echo'))?.up.name).to.equal('b');
    expect(await c.resolve('tools', 'echo'), "two servers offer it: prefixed, so the bare name is no one's").to.equal(undefined);
    bLists['tools/list'] = [tool('echo'), tool('total')];
    c.listChanged(ups[1]!, 'notifications/tools/list_changed');
    expect((await c.resolve('tools', 'total'))?.up.name).to.equal('b');
    expect(await c.resolve('tools', 'sum'), 'gone from its server').to.equal(undefined);
    const reads = asked.filter((a) => a === 'b tools/list').length;
    for (let i = 0; i < 5; i++) await c.resolve('tools', 'total');
    expect(asked.filter((a) => a === 'b tools/list').length, 'no reading for a call once the lists are known').to.equal(reads);
  });
});
