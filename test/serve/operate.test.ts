import { expect } from 'chai';
import type { ServeHandle } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { gone } from '../helpers/processes.js';
import { until } from '../helpers/poll.js';
import { MCP_HEADERS, rawRequest } from '../helpers/raw-http.js';
import { INIT, rawSession, STEPS, serveProcess, served } from '../helpers/served.js';

const STUBBORN = `${ROOT}dist/test/helpers/servers/stubborn.js`;

describe('serve: what a balancer and a browser page need', () => {
  let bridge: ServeHandle | undefined;
  afterEach(async () => {
    await bridge?.close();
    bridge = undefined;
  });

  it('GET /healthz answers 200 without the token, whatever the Host; 503 with the reason while draining', async () => {
    ({ bridge } = await served(STEPS, { token: 'secret-token', drainMs: 300 }));
    const healthz = bridge.url!.replace('/mcp', '/healthz');
    const ok = await rawRequest(healthz, { headers: { host: 'replica-3.internal:8080' } });
    expect(ok.status).to.equal(200);
    expect(JSON.parse(ok.body)).to.deep.equal({ status: 'ok', sessions: 0 });
    expect(ok.headers['cache-control']).to.equal('no-store');
    // The rest stays behind the token.
    expect((await rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT })).status).to.equal(401);
    const closing = bridge.close();
    const draining = await rawRequest(healthz);
    expect(draining.status).to.equal(503);
    expect(JSON.parse(draining.body)).to.deep.equal({ status: 'unavailable', reason: 'shutting down' });
    // While draining, sessions are still served.
    const init = await rawRequest(bridge.url!, { method: 'POST', headers: { ...MCP_HEADERS, authorization: 'Bearer secret-token' }, body: INIT });
    expect(init.status).to.equal(200);
    await closing;
  });

  it('/healthz is 503 when the command cannot start, naming why', async () => {
    ({ bridge } = await served({ command: `${ROOT}no-such-server` }));
    const answer = await rawRequest(bridge.url!.replace('/mcp', '/healthz'));
    expect(answer.status).to.equal(503);
    expect(JSON.parse(answer.body).reason).to.match(/^cannot start ".*no-such-server": no executable file there$/);
  });

  it('/healthz is 503 after a server process failed to start, naming why', async () => {
    // The command is there; the folder it is to run in is not, so each start fails.
    ({ bridge } = await served({ command: process.execPath, cwd: `${ROOT}no-such-folder` }));
    const healthz = bridge.url!.replace('/mcp', '/healthz');
    expect((await rawRequest(healthz)).status).to.equal(200);
    const init = await rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    expect(init.status).to.equal(502);
    const after = await rawRequest(healthz);
    expect(after.status).to.equal(503);
    expect(JSON.parse(after.body).reason).to.match(/^the last server process failed to start/);
  });

  it('CORS: a preflight from an allowed origin gets 204 with what MCP needs; answers carry the origin and expose the session headers', async () => {
    const origin = 'https://app.example';
    ({ bridge } = await served(STEPS, { allowOrigins: [origin], token: 'secret-token' }));
    const pre = await rawRequest(bridge.url!, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, mcp-session-id, mcp-param-region, authorization',
      },
    });
    expect(pre.status).to.equal(204);
    expect(pre.headers['access-control-allow-origin']).to.equal(origin);
    expect(pre.headers['access-control-allow-methods']).to.equal('GET, POST, DELETE, OPTIONS');
    const allowed = String(pre.headers['access-control-allow-headers']).split(', ');
    expect(allowed).to.include.members([
      'content-type',
      'authorization',
      'mcp-session-id',
      'mcp-protocol-version',
      'last-event-id',
      'mcp-param-region',
    ]);
    const foreign = await rawRequest(bridge.url!, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(foreign.status).to.equal(403);
    expect(foreign.headers['access-control-allow-origin']).to.equal(undefined);
    // A page without the token can read the 401; with it, the session id.
    const headers = { ...MCP_HEADERS, origin };
    const unauthorized = await rawRequest(bridge.url!, { method: 'POST', headers, body: INIT });
    expect(unauthorized.status).to.equal(401);
    expect(unauthorized.headers['access-control-allow-origin']).to.equal(origin);
    const session = await rawSession(bridge.url!, { origin, authorization: 'Bearer secret-token' });
    const answer = await rawRequest(bridge.url!, {
      method: 'POST',
      headers: { ...headers, authorization: 'Bearer secret-token', 'mcp-session-id': session },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(answer.status).to.equal(200);
    expect(answer.headers['access-control-allow-origin']).to.equal(origin);
    expect(answer.headers['access-control-expose-headers']).to.include('Mcp-Session-Id');
    expect(answer.headers['access-control-expose-headers']).to.include('MCP-Protocol-Version');
    expect(answer.headers.vary).to.include('Origin');
  });

  it('mcp-frame serve goes on after SIGHUP (a reload), and closes in order on SIGTERM: a child that ignores the end of stdin and SIGTERM is still ended', async function () {
    this.timeout(20_000);
    const served = await serveProcess(['--port', '0', '--', process.execPath, STUBBORN]);
    await rawSession(served.url!);
    const pid = Number(/server pid (\d+)/.exec(served.stderr())![1]);
    served.proc.kill('SIGHUP');
    await until(5000, 'the reload', () => served.stderr().includes('SIGHUP: the server is the command given'), 20);
    expect(served.proc.exitCode).to.equal(null);
    expect(process.kill(pid, 0), 'the session’s server goes on').to.equal(true);
    served.proc.kill('SIGTERM');
    expect(await served.exited).to.equal(0);
    expect(served.stderr()).to.match(/SIGTERM: closed 1 session, and stopped/);
    expect(await gone(pid, 5000)).to.equal(true);
  });
});
