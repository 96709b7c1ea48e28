import { expect } from 'chai';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FrameError } from '../../lib/errors.js';
import { ConnectionError } from '../../lib/client/errors.js';
import { errorAnswer, readJsonBody, SessionRenewal } from '../../lib/client/http-responses.js';
import { Resends } from '../../lib/client/resends.js';
import { ToolPolicy } from '../../lib/client/tool-policy.js';

const reconnect = { initialDelayMs: 1, maxDelayMs: 1, factor: 2, maxAttempts: 8, resend: 'harmless' as const };
const listCall = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

describe('client/resends: the modern era requests in flight, sent again under new ids', () => {
  it('sends a harmless request again at most twice, under a new id each time, and gives the answer its first id', () => {
    const resends = new Resends(new ToolPolicy());
    resends.track(listCall);
    const plan = resends.plan(1, reconnect);
    expect(plan).to.deep.include({ first: 1, attempt: 1 });
    const again = resends.again(1, listCall);
    expect(again.id).to.be.a('string').and.not.equal(1);
    const second = resends.plan(again.id as string, reconnect);
    expect(second).to.deep.include({ first: 1, attempt: 2 });
    const third = resends.again(1, listCall);
    expect(resends.plan(third.id as string, reconnect)).to.deep.equal({ first: 1, why: '3 times' });
    expect(resends.pending(1), 'given up on').to.equal(false);
  });

  it('does not send a tool call again unless the server said it is harmless twice, or resend is all', () => {
    const call = { jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'write' } };
    const resends = new Resends(new ToolPolicy());
    resends.track(call);
    const plan = resends.plan('c', reconnect);
    expect(plan)
      .to.have.property('why')
      .that.matches(/running it twice could do harm \(tools\/call/);
    resends.track(call);
    expect(resends.plan('c', { ...reconnect, resend: 'all' })).to.deep.include({ first: 'c', attempt: 1 });
    expect(resends.plan('c', false)).to.deep.equal({ first: 'c', why: 'and reconnect is off' });
  });

  it('maps an answer and a listen notification under a new id back to the first, and forgets a cancelled request', () => {
    const resends = new Resends(new ToolPolicy());
    const listen = { jsonrpc: '2.0', id: 9, method: 'subscriptions/listen' };
    resends.track(listen);
    resends.plan(9, reconnect);
    const again = resends.again(9, listen);
    const note = {
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': again.id } },
    };
    const seen = resends.incoming(note) as { params: { _meta: Record<string, unknown> } };
    expect(Object.values(seen.params._meta)).to.deep.equal([9]);
    expect(resends.incoming({ jsonrpc: '2.0', method: 'x' })).to.deep.equal({ jsonrpc: '2.0', method: 'x' });
    expect(resends.cancel(9)).to.deep.equal([again.id]);
    expect(resends.pending(9)).to.equal(false);
    resends.track(listCall);
    expect(resends.answered(1, { jsonrpc: '2.0', id: 1, result: { tools: [] } }, 's', true), 'no alias').to.equal(undefined);
    expect(resends.pending(1)).to.equal(false);
  });
});

describe('client/http-responses: what the HTTP channel reads of a response', () => {
  let server: http.Server;
  let reply: (res: http.ServerResponse) => void;
  const get = async (): Promise<http.IncomingMessage> =>
    new Promise((resolve, reject) => http.get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, resolve).on('error', reject));

  before(async () => {
    server = http.createServer((_req, res) => reply(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reads a JSON body within the limit, and names what is wrong with one that is not a message', async () => {
    reply = (res) => res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
    expect(await readJsonBody(await get(), 1024, (t) => t)).to.deep.equal({
      value: { jsonrpc: '2.0', id: 1, result: {} },
      text: '{"jsonrpc":"2.0","id":1,"result":{}}',
    });
    reply = (res) => res.end('{"token":"s3cret", broken');
    const bad = await readJsonBody(await get(), 1024, (t) => t.replace('s3cret', '[redacted]'));
    expect(bad).to.be.instanceOf(FrameError);
    expect((bad as FrameError).code).to.equal('INVALID_JSON');
    expect(JSON.stringify(bad)).to.not.include('s3cret');
    reply = (res) => res.end('x'.repeat(2048));
    expect(((await readJsonBody(await get(), 1024, (t) => t)) as FrameError).code).to.equal('MESSAGE_TOO_LARGE');
  });

  it('takes a JSON-RPC error to an owed request as its answer, and anything else as an HTTP status error', async () => {
    reply = (res) => {
      res.statusCode = 404;
      res.end('{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no such method"}}');
    };
    const answer = await errorAnswer(await get(), new Set([3]), '"s" answered POST /mcp', (t) => t);
    expect(answer).to.deep.include({ value: { jsonrpc: '2.0', id: 3, error: { code: -32601, message: 'no such method' } } });
    const other = await errorAnswer(await get(), new Set([4]), '"s" answered POST /mcp', (t) => t);
    expect(other).to.be.instanceOf(ConnectionError);
    expect((other as ConnectionError).message).to.match(/^"s" answered POST \/mcp with HTTP 404: /);
  });

  it('starts a new session once per run of 404s, with the initialize the session sent', async () => {
    const renewal = new SessionRenewal();
    const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: {} };
    renewal.sent(init);
    expect(renewal.isInitialize(0)).to.equal(true);
    const started: unknown[] = [];
    expect(renewal.expired()).to.equal(true);
    await renewal.renew(async (i) => void started.push(i));
    expect(started).to.deep.equal([init]);
    expect(renewal.expired(), 'a second 404 in a row').to.equal(false);
    renewal.succeeded();
    expect(renewal.expired()).to.equal(true);
  });
});
