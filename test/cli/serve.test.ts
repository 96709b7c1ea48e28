import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import { gone } from '../helpers/processes.js';
import { cli } from '../helpers/run.js';
import { ROOT } from '../helpers/fixtures.js';
import { rawSession, serveProcess } from '../helpers/served.js';
import { tempDir } from '../helpers/temp.js';
import { rawRequest } from '../helpers/raw-http.js';
import { freePort } from '../helpers/ports.js';
import { within, until } from '../helpers/poll.js';

describe('mcp-frame serve', () => {
  it('refuses bad usage before it listens: no server, an unset token variable, a bad origin, a store that is not Redis', async () => {
    const none = await cli(['serve']);
    expect(none.code).to.equal(2);
    expect(none.stderr).to.include('usage: mcp-frame serve');
    const token = await cli(['serve', '--token-env', 'MCP_FRAME_UNSET_TOKEN', '--', process.execPath, 'dist/examples/server.js']);
    expect(token.code).to.equal(2);
    expect(token.stderr).to.include('the variable MCP_FRAME_UNSET_TOKEN is not set');
    const origin = await cli(['serve', '--allow-origin', 'not an origin', '--', process.execPath, 'dist/examples/server.js']);
    expect(origin.code).to.equal(2);
    // A store that is not a Redis URL; its password is not echoed.
    const store = await cli(['serve', '--store', 'http://user:hunter2@cache:6379', '--', process.execPath, 'dist/examples/server.js']);
    expect(store.code).to.equal(2);
    expect(store.stderr).to.include('--store takes a Redis URL such as redis://127.0.0.1:6379');
    expect(store.stderr).to.not.include('hunter2');
    const sentinel = await cli(['serve', '--store', 'redis+sentinel://:hunter2@s1:26379', '--', process.execPath, 'dist/examples/server.js']);
    expect(sentinel.code).to.equal(2);
    expect(sentinel.stderr).to.include('redis+sentinel://host:port[,host:port...]/<master name>[/<db>]');
    expect(sentinel.stderr).to.not.include('hunter2');
    const socketOnly = await cli(['serve', '--no-http', '--socket', '/tmp/x.sock', '--store', 'redis://127.0.0.1:6379', '--', process.execPath, 'x']);
    expect(socketOnly.code).to.equal(2);
    expect(socketOnly.stderr).to.include('--store shares HTTP sessions');
    const help = await cli(['serve', '--help']);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.include('--token-env <VAR>');
  });

  it('takes the store from --store-env, its password off the command line, and checks --advertise-url before it listens', async function () {
    this.timeout(20_000);
    const demo = ['--', process.execPath, 'dist/examples/server.js'];
    const unset = await cli(['serve', '--store-env', 'MCP_FRAME_UNSET_STORE', ...demo]);
    expect(unset.code).to.equal(2);
    expect(unset.stderr).to.include('the variable MCP_FRAME_UNSET_STORE is not set');
    const env = { ...process.env, MCP_FRAME_TEST_STORE: 'http://user:hunter2@cache:6379' };
    const wrong = await cli(['serve', '--store-env', 'MCP_FRAME_TEST_STORE', ...demo], { env });
    expect(wrong.code).to.equal(2);
    expect(wrong.stderr).to.include('--store takes a Redis URL');
    expect(wrong.stderr).to.not.include('hunter2');
    const both = await cli(['serve', '--store', 'redis://127.0.0.1:6379', '--store-env', 'MCP_FRAME_TEST_STORE', ...demo], { env });
    expect(both.code).to.equal(2);
    expect(both.stderr).to.include('--store and --store-env name two stores');
    const alone = await cli(['serve', '--advertise-url', 'http://10.0.0.5:8080', ...demo]);
    expect(alone.code).to.equal(2);
    expect(alone.stderr).to.include('--advertise-url is where other replicas reach this one: it needs --store');
    for (const [url, why] of [
      ['http://10.0.0.5:8080/mcp', 'without a path'],
      ['ftp://10.0.0.5', 'must be http:// or https://'],
      ['http://peer:hunter2@10.0.0.5:8080', 'must not carry credentials'],
    ]) {
      const bad = await cli(['serve', '--store', 'redis://127.0.0.1:6379', '--advertise-url', url!, ...demo]);
      expect(bad.code, url).to.equal(2);
      expect(bad.stderr, url).to.include(why);
      expect(bad.stderr, url).to.not.include('hunter2');
    }
  });

  it("starts each of serve's log lines with the time (ISO 8601, UTC) after its prefix; a JSON line has its own", async function () {
    this.timeout(20_000);
    for (const format of ['text', 'json'] as const) {
      const { proc, stderr, exited, url } = await serveProcess(['--log-format', format, '--', process.execPath, `${ROOT}dist/examples/server.js`]);
      await rawSession(url!);
      await until(2000, 'serve started', () => /started/.test(stderr()), 20);
      proc.kill('SIGTERM');
      await exited;
      const line = stderr()
        .split('\n')
        .find((l) => l.includes('started'))!;
      if (format === 'text') expect(line).to.match(/^mcp-frame serve: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z session [0-9a-f]{8}\S* started/);
      else expect(Date.parse((JSON.parse(line) as { time: string; msg: string }).time)).to.be.closeTo(Date.now(), 20_000);
    }
  });

  it('writes every line as one JSON object with --log-format json, the level by what happened: start, sessions, reload, shutdown, a failed start', async function () {
    this.timeout(30_000);
    const dir = tempDir('serve-json-log');
    const policy = join(dir, 'policy.json');
    writeFileSync(policy, JSON.stringify({ rules: [{ tools: ['*'] }] }));
    const config = join(dir, 'mcp.json');
    const demo = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };
    writeFileSync(config, JSON.stringify({ mcpServers: { demo, gone: { command: '/nonexistent/mcp-server' } } }));
    const { proc, stderr, exited, url } = await serveProcess(['--log-format', 'json', '--config', config, '--all', '--policy', policy]);
    await rawSession(url!);
    await within(5000, '"session.started"', () => (stderr().includes('"session.started"') ? true : undefined), 20);
    proc.kill('SIGHUP');
    await within(5000, '"serve.reloaded"', () => (stderr().includes('"serve.reloaded"') ? true : undefined), 20);
    writeFileSync(policy, '{ "rules": [ broken');
    proc.kill('SIGHUP');
    await within(5000, '"serve.reload_failed"', () => (stderr().includes('"serve.reload_failed"') ? true : undefined), 20);
    proc.kill('SIGTERM');
    expect(await exited).to.equal(0);
    const records = stderr()
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const record of records) {
      expect(Date.parse(record.time as string), JSON.stringify(record)).to.be.closeTo(Date.now(), 60_000);
      expect(['debug', 'info', 'warn', 'error']).to.include(record.level);
      expect(record.event).to.be.a('string');
      expect(record.msg).to.be.a('string');
    }
    const find = (event: string): Record<string, unknown> => records.find((r) => r.event === event) ?? expect.fail(`no ${event} line`);
    expect(find('upstream.cannot_start')).to.deep.include({ level: 'warn', upstream: 'gone' });
    expect(find('serve.listening')).to.deep.include({ level: 'info', url });
    expect(find('session.started')).to.deep.include({ level: 'info', transport: 'streamable' });
    expect(find('session.started').session).to.match(/^[0-9a-f]{8}$/);
    expect(find('serve.reloaded')).to.deep.include({ level: 'info' });
    expect(find('serve.reload_failed')).to.deep.include({ level: 'error' });
    expect(find('serve.stopping')).to.deep.include({ level: 'info', signal: 'SIGTERM' });
    expect(records.at(-1)).to.deep.include({ event: 'serve.stopped', level: 'info', signal: 'SIGTERM', sessions: 1 });

    // A serve that cannot start says why in one JSON line too, and only there.
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    try {
      const port = (busy.address() as AddressInfo).port;
      const failed = await cli(['serve', '--log-format', 'json', '--port', String(port), '--', process.execPath, `${ROOT}dist/examples/server.js`]);
      expect(failed.code).to.equal(4);
      const lines = failed.stderr.trimEnd().split('\n');
      expect(lines).to.have.length(1);
      expect(JSON.parse(lines[0]!)).to.deep.include({ level: 'error', event: 'serve.failed', exitCode: 4 });
      expect((JSON.parse(lines[0]!) as { msg: string }).msg).to.match(/^cannot listen: .*EADDRINUSE/);
    } finally {
      busy.close();
    }
  });

  it('says where the metrics port listens (--metrics-host with --metrics-port), and refuses --metrics-host alone', async () => {
    const alone = await cli(['serve', '--metrics-host', '0.0.0.0', '--', process.execPath, `${ROOT}dist/examples/server.js`]);
    expect(alone.code).to.equal(2);
    expect(alone.stderr).to.include('--metrics-host is the address of the --metrics-port listener: give --metrics-port too');
    const port = await freePort();
    const { proc, stderr, exited } = await serveProcess([
      '--metrics-port',
      String(port),
      '--metrics-host',
      '127.0.0.2',
      '--',
      process.execPath,
      `${ROOT}dist/examples/server.js`,
    ]);
    const url = await within(5000, 'the metrics line', () => /metrics on (http:\/\/127\.0\.0\.2:\d+\/metrics)/.exec(stderr())?.[1], 20);
    expect(url).to.equal(`http://127.0.0.2:${port}/metrics`);
    const scraped = await rawRequest(url, {});
    expect(scraped.status).to.equal(200);
    expect(scraped.body).to.include('process_cpu_user_seconds_total');
    proc.kill('SIGTERM');
    expect(await exited).to.equal(0);
  });

  it('names the tools of a config of one server <server>__<tool> behind --all, so that a policy for the gateway holds', async () => {
    const dir = tempDir('serve-all-one');
    const config = join(dir, 'mcp.json');
    const policy = join(dir, 'policy.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] } } }));
    writeFileSync(policy, JSON.stringify({ rules: [{ tools: ['demo__echo'] }] }));
    const { proc, exited, url } = await serveProcess(['--all', '--config', config, '--policy', policy]);
    const c = await connect({ type: 'http', url: url! }, { protocolVersion: '2025-11-25' });
    try {
      const listed = ((await c.request('tools/list')) as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
      expect(listed).to.deep.equal(['demo__echo']);
      expect(await c.request('tools/call', { name: 'demo__echo', arguments: { text: 'one ✓' } })).to.deep.include({
        content: [{ type: 'text', text: 'one ✓' }],
      });
    } finally {
      await c.close();
    }
    proc.kill('SIGTERM');
    expect(await exited).to.equal(0);
    // Named, one server is served as it is.
    const named = await serveProcess(['demo', '--config', config]);
    const d = await connect({ type: 'http', url: named.url! }, { protocolVersion: '2025-11-25' });
    try {
      expect(((await d.request('tools/list')) as { tools: Array<{ name: string }> }).tools.map((t) => t.name)).to.include('echo');
    } finally {
      await d.close();
    }
    named.proc.kill('SIGTERM');
    expect(await named.exited).to.equal(0);
  });

  it('answers on the paths --path, --sse-path and --messages-path give, and names them in a 404', async function () {
    this.timeout(20_000);
    const { proc, exited, url } = await serveProcess([
      '--path',
      '/api/mcp',
      '--sse-path',
      '/api/events',
      '--messages-path',
      '/api/post',
      '--',
      process.execPath,
      `${ROOT}dist/examples/server.js`,
    ]);
    try {
      expect(url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/api\/mcp$/);
      const streamable = await connect({ type: 'http', url: url! }, { protocolVersion: '2025-11-25' });
      expect(await streamable.request('tools/call', { name: 'echo', arguments: { text: 'on /api/mcp' } })).to.deep.equal({
        content: [{ type: 'text', text: 'on /api/mcp' }],
      });
      await streamable.close();
      // The legacy transport: its endpoint event names the messages path given.
      const legacy = await connect({ type: 'sse', url: url!.replace('/api/mcp', '/api/events') });
      expect(await legacy.request('tools/call', { name: 'echo', arguments: { text: 'over SSE' } })).to.deep.equal({
        content: [{ type: 'text', text: 'over SSE' }],
      });
      await legacy.close();
      const old = await fetch(url!.replace('/api/mcp', '/mcp'), { method: 'POST', body: '{}' });
      expect(old.status).to.equal(404);
      expect(await old.text()).to.include('the MCP endpoint is /api/mcp; the legacy SSE one /api/events');
    } finally {
      proc.kill('SIGTERM');
      await exited;
    }
  });

  it('serves every server of a config behind one endpoint with --all, or those named, and refuses bad gateway usage', async function () {
    this.timeout(30_000);
    const dir = tempDir('serve-gateway-');
    const config = join(dir, 'mcp.json');
    const peer = (name: string) => ({ command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, name] });
    writeFileSync(config, JSON.stringify({ mcpServers: { a: peer('a'), b: peer('b'), gone: { command: 'mcp-frame-no-such-command' } } }));
    const { proc, stderr, exited, url } = await serveProcess(['--all', '--config', config, '--deny-tools', '*__die']);
    try {
      expect(stderr()).to.include(
        'warning: server "gone" cannot start ("mcp-frame-no-such-command": command not found on PATH); its tools are left out',
      );
      const c = await connect({ type: 'http', url: url! }, { protocolVersion: '2025-11-25' });
      // One page holds both servers' tools, but those --deny-tools leaves out.
      const { tools } = (await c.request('tools/list')) as { tools: Array<{ name: string }> };
      const each = (server: string) => ['echo', 'shared', 'hang', 'progress', 'ask', `${server}-only`].map((t) => `${server}__${t}`);
      expect(tools.map((t) => t.name)).to.deep.equal([...each('a'), ...each('b')]);
      expect((c.initializeResult as { serverInfo: { name: string } }).serverInfo.name).to.equal('mcp-frame');
      expect(await c.request('tools/call', { name: 'b__b-only', arguments: { text: 'cli ✓' } })).to.deep.equal({
        content: [{ type: 'text', text: 'b: cli ✓' }],
      });
      await c.close();
    } finally {
      proc.kill('SIGINT');
    }
    expect(await exited).to.equal(0);
    const named = await serveProcess(['a', 'b', '--config', config, '--name', 'team', '--prefix', 'conflicts']);
    const d = await connect({ type: 'http', url: named.url! }, { protocolVersion: '2025-11-25' });
    expect((d.initializeResult as { serverInfo: { name: string } }).serverInfo.name).to.equal('team');
    expect(await d.request('tools/call', { name: 'a-only', arguments: { text: 'unprefixed' } })).to.deep.equal({
      content: [{ type: 'text', text: 'a: unprefixed' }],
    });
    await d.close();
    named.proc.kill('SIGINT');
    expect(await named.exited).to.equal(0);
    const clash = await cli(['serve', 'a', 'b', '--config', config, '--prefix', 'never']);
    expect(clash.code).to.equal(3);
    expect(clash.stderr).to.include('--prefix never: names offered by two servers: tool echo (a, b)');
    const bogus = await cli(['serve', '--all', '--config', config, '--prefix', 'sometimes']);
    expect(bogus.code).to.equal(2);
    expect(bogus.stderr).to.include('--prefix takes always, conflicts or never, got "sometimes"');
    const both = await cli(['serve', 'a', '--all', '--config', config]);
    expect(both.code).to.equal(2);
    const missing = await cli(['serve', 'a', 'nobody', '--config', config]);
    expect(missing.code).to.equal(3);
    expect(missing.stderr).to.include('no server "nobody" in');
  });

  it('reloads --policy on SIGHUP, and keeps the policy in force when the new file is not one', async function () {
    this.timeout(30_000);
    const dir = tempDir('serve-policy-');
    const config = join(dir, 'mcp.json');
    const policy = join(dir, 'policy.json');
    const peer = (name: string) => ({ command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, name] });
    writeFileSync(config, JSON.stringify({ mcpServers: { a: peer('a'), b: peer('b') } }));
    writeFileSync(policy, JSON.stringify({ rules: [{ tools: ['a__echo'] }] }));
    const { proc, stderr, exited, url } = await serveProcess(['--all', '--config', config, '--policy', policy]);
    const names = async (): Promise<string[]> => {
      const c = await connect({ type: 'http', url: url! }, { protocolVersion: '2025-11-25' });
      try {
        const names: string[] = [];
        let cursor: string | undefined;
        do {
          const page = (await c.request('tools/list', cursor === undefined ? {} : { cursor })) as {
            tools: Array<{ name: string }>;
            nextCursor?: string;
          };
          names.push(...page.tools.map((t) => t.name));
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return names;
      } finally {
        await c.close();
      }
    };
    expect(await names()).to.deep.equal(['a__echo']);
    writeFileSync(policy, JSON.stringify({ rules: [{ tools: ['b__echo', 'b__shared'] }] }));
    proc.kill('SIGHUP');
    await within(5000, 'the serve process', () => (stderr().includes('SIGHUP: reloaded the policy') ? true : undefined));
    expect(await names()).to.deep.equal(['b__echo', 'b__shared']);
    writeFileSync(policy, '{ "rules": [ { "tools": 7 } ] }');
    proc.kill('SIGHUP');
    await within(5000, 'the serve process', () => (stderr().includes('SIGHUP: kept the policy in force') ? true : undefined));
    expect(stderr()).to.include('rules[0].tools must be an array of non-empty strings');
    expect(await names()).to.deep.equal(['b__echo', 'b__shared']);
    expect(proc.exitCode).to.equal(null);
    proc.kill('SIGINT');
    expect(await exited).to.equal(0);
  });

  it('serves a config entry over HTTP with a token from the environment, and exits 0 on SIGINT', async function () {
    this.timeout(20_000);
    const { proc, stderr, exited, url } = await serveProcess(['demo', '--token-env', 'SERVE_TOKEN'], {
      ...process.env,
      SERVE_TOKEN: 'tok-1234567890',
    });
    expect(stderr()).to.match(/^mcp-frame serve: \d{4}-\d\d-\d\dT[\d:.]+Z using \.mcp\.json$/m);
    const c = await connect({ type: 'http', url: url!, headers: { Authorization: 'Bearer tok-1234567890' } });
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'served ✓' } })).to.deep.include({
      content: [{ type: 'text', text: 'served ✓' }],
    });
    const child = Number(/server pid (\d+)/.exec(stderr())![1]);
    proc.kill('SIGINT');
    expect(await exited).to.equal(0);
    await c.close();
    expect(await gone(child)).to.equal(true);
    expect(stderr()).to.not.include('tok-1234567890');
    // A clean shutdown is one line: the children it ends are not reported as failures.
    // The client spoke 2026-07-28 (serve translates for the demo server): no session, the shared child closed.
    expect(stderr()).to.match(/mcp-frame serve: \d{4}-\d\d-\d\dT[\d:.]+Z SIGINT: closed 0 sessions, and stopped\n$/);
    expect(stderr()).not.to.match(/ended: |exited with|killed by/);
  });

  it('a second Ctrl-C while closing kills every server group at once and exits, orphaning none (servers that ignore SIGTERM too)', async function () {
    this.timeout(20_000);
    const stubborn = [process.execPath, `${ROOT}dist/test/helpers/servers/stubborn.js`, 'spawn-child'];
    const { proc, stderr, exited, url } = await serveProcess(['--drain-ms', '10000', '--', ...stubborn]);
    await rawSession(url!);
    const child = Number(/server pid (\d+)/.exec(stderr())![1]);
    const grandchild = Number(
      /grandchild pid (\d+)/.exec(stderr())?.[1] ?? (await within(5000, 'the serve process', () => /grandchild pid (\d+)/.exec(stderr())?.[1])),
    );
    proc.kill('SIGINT');
    // Closing now: its first step (--drain-ms) lasts 10 s.
    await until(2000, 'serve saying it shuts down', () => stderr().includes('SIGINT: shutting down'), 10);
    const started = Date.now();
    proc.kill('SIGINT');
    expect(await exited).to.equal(130);
    expect(Date.now() - started).to.be.below(3000);
    expect(await gone(child)).to.equal(true);
    expect(await gone(grandchild)).to.equal(true);
    expect(stderr()).to.match(/SIGINT again: killing every server now/);
  });
});
