// The modern requests' child when some server is reached with each caller's exchanged token (serve/sessions/
// callers.ts): each signed-in caller's requests go to a gateway of that caller's own, serve's own and those of no
// signed-in caller to the shared one; cancellations follow their request; an idle caller's gateway closes, and
// what a closed one had in flight is answered. The gateways here are small recorders standing in for Gateway (the
// routing alone is under test; test/serve/exchange.test.ts runs the whole with real servers and an identity provider).
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { ConnectionError } from '../../lib/client/errors.js';
import type { Gateway } from '../../lib/gateway/gateway.js';
import { type Caller, signedInWith } from '../../lib/protocol/caller.js';
import { CallerGateways } from '../../lib/serve/sessions/callers.js';

type Json = Record<string, unknown>;

class Recorder extends EventEmitter {
  readonly sent: Json[] = [];
  closed = false;
  readonly name: string;

  constructor(name: string) {
    super();
    this.name = name;
  }

  send(msg: Json): Promise<void> {
    if (this.closed) return Promise.reject(this.endError('the request'));
    this.sent.push(msg);
    return Promise.resolve();
  }

  endError(what: string): ConnectionError {
    return new ConnectionError('CLOSED', `${what}: the gateway "${this.name}" is closed`);
  }

  declaredHeaders(): undefined {
    return undefined;
  }

  policyChanged(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<{ code: number; signal: null }> {
    if (!this.closed) {
      this.closed = true;
      this.emit('close', { code: 0, signal: null });
    }
    return Promise.resolve({ code: 0, signal: null });
  }
}

const caller = (subject: string, token = `token-of-${subject}`): Caller => signedInWith({ subject, scopes: [], claims: { sub: subject } }, token);
const call = (id: number): Json => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'remote__whoami', arguments: {} } });

describe('serve: each signed-in caller’s gateway for its modern requests', () => {
  let shared: Recorder;
  let made: Map<string, Recorder>;
  let heard: string[];
  let gateways: CallerGateways;
  const make = (options: { idleMs?: number; maxCallers?: number } = {}): CallerGateways => {
    shared = new Recorder('shared');
    made = new Map();
    heard = [];
    gateways = new CallerGateways({
      name: 'modern requests',
      shared: shared as unknown as Gateway,
      open: (who) => {
        const gateway = new Recorder(who.subject);
        made.set(who.subject, gateway);
        return gateway as unknown as Gateway;
      },
      heard: (_gateway, who) => heard.push(who.subject),
      ...options,
    });
    return gateways;
  };
  afterEach(() => gateways.close());

  it('sends each signed-in caller’s requests to a gateway of its own, and serve’s own and no one’s to the shared one', async () => {
    make();
    const answers: unknown[] = [];
    gateways.on('message', (msg) => answers.push(msg));
    await gateways.send(call(1), caller('alice'));
    await gateways.send(call(2), caller('bob'));
    await gateways.send(call(3), caller('alice', 'a refreshed token'));
    await gateways.send(call(4), { subject: 'nobody signed in', scopes: [], claims: {} });
    await gateways.send(call(5));
    expect(made.get('alice')!.sent.map((m) => m.id)).to.deep.equal([1, 3]);
    expect(made.get('bob')!.sent.map((m) => m.id)).to.deep.equal([2]);
    expect(shared.sent.map((m) => m.id)).to.deep.equal([4, 5]);
    expect(heard).to.deep.equal(['alice', 'bob', 'alice']);
    expect(gateways.gateways).to.have.length(2);
    // Every gateway's answers reach the hub.
    made.get('bob')!.emit('message', { jsonrpc: '2.0', id: 2, result: {} });
    shared.emit('message', { jsonrpc: '2.0', id: 5, result: {} });
    expect(answers).to.deep.equal([
      { jsonrpc: '2.0', id: 2, result: {} },
      { jsonrpc: '2.0', id: 5, result: {} },
    ]);
  });

  it('sends a cancellation to the gateway its request went to, whoever sends it', async () => {
    make();
    await gateways.send(call(7), caller('alice'));
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'the client closed its response' } };
    await gateways.send(cancel);
    expect(made.get('alice')!.sent.at(-1)).to.deep.equal(cancel);
    expect(shared.sent).to.deep.equal([]);
    // Once answered, a cancellation of that id is no one's request: the shared gateway's to ignore.
    made.get('alice')!.emit('message', { jsonrpc: '2.0', id: 7, result: {} });
    await gateways.send(cancel);
    expect(shared.sent).to.deep.equal([cancel]);
  });

  it('closes a caller’s gateway once it has had nothing in flight for the idle time, and makes a new one at its next request', async () => {
    make({ idleMs: 50 });
    await gateways.send(call(1), caller('alice'));
    const first = made.get('alice')!;
    await sleep(100);
    expect(first.closed, 'a request in flight keeps it open').to.equal(false);
    first.emit('message', { jsonrpc: '2.0', id: 1, result: {} });
    await sleep(100);
    expect(first.closed).to.equal(true);
    expect(gateways.gateways).to.deep.equal([]);
    await gateways.send(call(2), caller('alice'));
    expect(made.get('alice')).to.not.equal(first);
    expect(made.get('alice')!.sent.map((m) => m.id)).to.deep.equal([2]);
  });

  it('keeps a caller’s gateway open, idle or not, while a task it made is kept (its tasks live in it)', async () => {
    make({ idleMs: 50 });
    await gateways.send(call(1), caller('alice'));
    const first = made.get('alice')!;
    first.emit('message', { jsonrpc: '2.0', id: 1, result: { resultType: 'task', taskId: 'alice__x:1', ttlMs: 400 } });
    await sleep(200);
    expect(first.closed, 'its task is still kept').to.equal(false);
    await sleep(350);
    expect(first.closed).to.equal(true);
  });

  it('answers what a caller’s gateway had in flight when it closes, so that no request waits for nothing', async () => {
    make();
    const answers: Json[] = [];
    gateways.on('message', (msg: Json) => answers.push(msg));
    await gateways.send(call(1), caller('alice'));
    await gateways.send(call(2), caller('alice'));
    made.get('alice')!.emit('message', { jsonrpc: '2.0', id: 1, result: {} });
    await made.get('alice')!.close();
    expect(answers.map((m) => m.id)).to.deep.equal([1, 2]);
    expect(answers[1]!.error).to.deep.include({ code: -32000 });
    expect((answers[1]!.error as Json).message).to.match(/the caller’s gateway: the gateway "alice" is closed/);
  });

  it('closes the least recently used idle caller’s gateway to make room, and refuses a new caller when none is idle', async () => {
    make({ maxCallers: 2 });
    await gateways.send(call(1), caller('alice'));
    await gateways.send(call(2), caller('bob'));
    const refused = (await gateways.send(call(3), caller('carol')).catch((e: Error) => e)) as Error;
    expect(refused.message).to.match(/2 signed-in callers have requests in flight already/);
    made.get('alice')!.emit('message', { jsonrpc: '2.0', id: 1, result: {} });
    await gateways.send(call(4), caller('carol'));
    expect(made.get('alice')!.closed).to.equal(true);
    expect(made.get('bob')!.closed).to.equal(false);
    expect(made.get('carol')!.sent.map((m) => m.id)).to.deep.equal([4]);
  });

  it('closes every caller’s gateway and the shared one when it closes, and refuses what comes after', async () => {
    make();
    await gateways.send(call(1), caller('alice'));
    let closed = 0;
    gateways.on('close', () => closed++);
    await gateways.close();
    expect(made.get('alice')!.closed).to.equal(true);
    expect(shared.closed).to.equal(true);
    expect(closed).to.equal(1);
    const after = (await gateways.send(call(2), caller('alice')).catch((e: Error) => e)) as Error;
    expect(after.message).to.match(/is closed/);
  });
});
