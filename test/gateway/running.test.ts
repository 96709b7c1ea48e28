import { expect } from 'chai';
import { createLogger } from '../../lib/log.js';
import type { Caller } from '../../lib/protocol/caller.js';
import { CANCELLED_RUNS_MS, RunningCalls } from '../../lib/gateway/running.js';
import { Upstream } from '../../lib/gateway/upstream.js';

const caller = (sub: string): Caller => ({ subject: `iss|${sub}`, scopes: [], claims: { sub } });
const upstream = (name: string, index: number): Upstream =>
  new Upstream(
    name,
    index,
    { command: 'unused' },
    {
      opener: () => Promise.reject(new Error('not opened in these tests')),
      capabilities: () => ({}),
      setup: () => undefined,
      maxPending: 8,
      health: undefined,
      log: createLogger({ write: () => undefined }),
    },
  );

describe('gateway/running: the calls that may still run at the servers, and whose a message is', () => {
  const bank = upstream('bank', 0);
  const vault = upstream('vault', 1);
  let calls: RunningCalls;
  beforeEach(() => {
    calls = new RunningCalls();
  });
  afterEach(() => calls.close());

  it("gives a server's message to its only call, and to nobody when two callers' calls may run there", () => {
    const alice = calls.begin({ key: 'number:1', id: 1, caller: caller('alice') }, bank);
    expect(calls.ownerOf(bank)).to.equal(alice);
    expect(calls.ownerOf(vault), 'nothing runs at the vault').to.equal(undefined);
    calls.begin({ key: 'number:2', id: 2, caller: caller('bob') }, bank);
    expect(calls.ownerOf(bank), 'a pick between callers is nobody').to.equal(undefined);
    // Two calls of one caller: which call is not known, so none.
    const solo = new RunningCalls();
    solo.begin({ key: 'number:1', id: 1, caller: caller('carol') }, vault);
    solo.begin({ key: 'number:2', id: 2, caller: caller('carol') }, vault);
    expect(solo.ownerOf(vault)).to.equal(undefined);
  });

  it('takes the call a Connection names, while it runs and is not cancelled', () => {
    const a = calls.begin({ key: 'number:1', id: 1, caller: caller('alice') }, bank);
    calls.begin({ key: 'number:2', id: 2, caller: caller('bob') }, bank);
    expect(calls.ownerOf(bank, a)).to.equal(a);
    calls.cancel('number:1', 'the client went');
    expect(a.cancelled).to.equal(true);
    expect(a.abort.signal.aborted).to.equal(true);
    expect(a.abort.signal.reason).to.equal('the client went');
    expect(calls.ownerOf(bank, a)).to.equal(undefined);
    expect(calls.ownerOf(bank, { not: 'a call of these' })).to.equal(undefined);
  });

  it('keeps a cancelled call as running for CANCELLED_RUNS_MS: no other caller gets its server’s messages meanwhile', () => {
    expect(CANCELLED_RUNS_MS).to.equal(60_000);
    const bob = calls.begin({ key: 'number:1', id: 1, caller: caller('bob') }, bank);
    calls.settle(bob, true);
    const alice = calls.begin({ key: 'number:2', id: 2, caller: caller('alice') }, bank);
    expect(calls.ownerOf(bank), "Bob's cancelled call may still be asking").to.equal(undefined);
    const done = calls.begin({ key: 'number:3', id: 3, caller: caller('alice') }, vault);
    calls.settle(done, false);
    expect(calls.ownerOf(vault), 'a finished call runs nowhere').to.equal(undefined);
    calls.settle(alice, false);
    expect(calls.ownerOf(bank)).to.equal(undefined);
  });

  it('hands each server tokens of its own: another server cannot speak in a call it was not given', () => {
    const own = calls.token(bank, 'client-token-7');
    expect(own).to.match(/^mcp-frame-[0-9a-f-]{36}$/);
    expect(calls.token(bank, 'client-token-7')).to.not.equal(own);
    expect(calls.clientToken(bank, own)).to.deep.equal({ up: bank, token: 'client-token-7' });
    expect(calls.clientToken(vault, own)).to.equal(undefined);
    expect(calls.clientToken(bank, 'mcp-frame-1')).to.equal(undefined);
    calls.dropToken(own);
    expect(calls.clientToken(bank, own)).to.equal(undefined);
  });

  it('knows a waited-for call by its key until the client is answered', () => {
    const a = calls.begin({ key: 'string:x', id: 'x', caller: undefined }, bank);
    expect(calls.get('string:x')).to.equal(a);
    calls.forget('string:x');
    expect(calls.get('string:x')).to.equal(undefined);
    calls.cancel('string:x', 'gone');
    expect(a.cancelled, 'a forgotten call is not cancelled by its key').to.equal(false);
  });
});
