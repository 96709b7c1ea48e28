import { expect } from 'chai';
import { listPages } from '../../lib/protocol/paging.js';

describe('protocol/paging: a paged list read to its end, bounded', () => {
  it("collects every page's items in order and asks with each page's cursor", async () => {
    const asked: Array<string | undefined> = [];
    const pages: Record<string, unknown> = {
      first: { tools: [1, 2], nextCursor: 'c1' },
      c1: { tools: [3], nextCursor: 'c2' },
      c2: { tools: [4, 5] },
    };
    const listing = await listPages(async (cursor) => {
      asked.push(cursor);
      return pages[cursor ?? 'first'];
    }, 'tools');
    expect(listing).to.deep.equal({ items: [1, 2, 3, 4, 5], stopped: undefined });
    expect(asked).to.deep.equal([undefined, 'c1', 'c2']);
  });

  it('stops at a cursor given a second time, and says so', async () => {
    let calls = 0;
    const listing = await listPages(async (cursor) => {
      calls++;
      return { prompts: [cursor ?? 'start'], nextCursor: cursor === undefined ? 'x' : cursor === 'x' ? 'y' : 'x' };
    }, 'prompts');
    expect(listing.items).to.deep.equal(['start', 'x', 'y']);
    expect(listing.stopped).to.equal('the server gave cursor "x" a second time');
    expect(calls).to.equal(3);
  });

  it('stops after maxPages of a server that never ends, and takes a page without the key as empty', async () => {
    let n = 0;
    const listing = await listPages(async () => ({ tools: n % 2 === 0 ? [n] : 'no', nextCursor: `p${++n}` }), 'tools', 4);
    expect(listing.items).to.deep.equal([0, 2]);
    expect(listing.stopped).to.equal('4 pages read, and the server offered more');
    expect(n).to.equal(4);
  });

  it('passes on a page that fails', async () => {
    await listPages(async () => {
      throw new Error('page failed');
    }, 'tools').then(
      () => expect.fail('resolved'),
      (err: Error) => expect(err.message).to.equal('page failed'),
    );
  });
});
