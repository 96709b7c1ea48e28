import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { expect } from 'chai';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cassette, parseCassette } from '../../lib/cassette/cassette.js';
import { RpcError, type Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { FrameError } from '../../lib/errors.js';
import { frame } from '../../lib/framings/ndjson.js';
import { ROOT } from '../helpers/fixtures.js';
import { cli } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';
import { until } from '../helpers/poll.js';

const main = `${ROOT}dist/lib/cli/main.js`;
const everything = [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'];

describe('mcp-frame record and replay', function () {
  this.timeout(60_000);
  const dir = tempDir('cassette');
  const cassette = join(dir, 'everything.cassette');
  const open: Connection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });

  const message = 'line one\nline two \u2028 😀';
  const calls: Array<[string, unknown]> = [
    ['tools/list', {}],
    ['tools/call', { name: 'echo', arguments: { message } }],
    ['tools/call', { name: 'get-sum', arguments: { a: 2, b: 40 } }],
  ];

  it('records a real session with server-everything through the proxy, then replays it in another order', async () => {
    const recording = await connect(
      { command: process.execPath, args: [main, 'record', '--out', cassette, '--', process.execPath, ...everything] },
      { name: 'recorded' },
    );
    open.push(recording);
    const live: unknown[] = [];
    for (const [method, params] of calls) live.push(await recording.request(method, params));
    expect((live[1] as { content: Array<{ text: string }> }).content[0]!.text).to.equal(`Echo: ${message}`);
    await recording.close();
    open.pop();

    const events = parseCassette(readFileSync(cassette, 'utf8'), cassette);
    const methods = events.filter((e) => e.from === 'client' && 'msg' in e).map((e) => (e as { msg: { method: string } }).msg.method);
    // The era probe first: server-everything (the 1.x SDK) is legacy and refuses it with -32601.
    expect(methods).to.deep.equal(['server/discover', 'initialize', 'notifications/initialized', 'tools/list', 'tools/call', 'tools/call']);
    expect(events.every((e, i) => i === 0 || e.t >= events[i - 1]!.t)).to.equal(true);

    const misses: string[] = [];
    const replaying = await connect(
      { command: process.execPath, args: [main, 'replay', cassette] },
      {
        name: 'replayed',
        onSpawn: (c) => c.on('stderr', (line: string) => misses.push(line)),
      },
    );
    open.push(replaying);
    expect(replaying.initializeResult).to.deep.equal(recording.initializeResult);
    const order = [2, 0, 1];
    for (const i of order) expect(await replaying.request(calls[i]![0], calls[i]![1]), `call ${i}`).to.deep.equal(live[i]);

    // A request the cassette never saw gets an error response at once, and a line on stderr.
    let caught: unknown;
    try {
      await replaying.request('tools/call', { name: 'echo', arguments: { message: 'not recorded' } }, { timeoutMs: 5000 });
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(RpcError);
    expect((caught as RpcError).code).to.equal(-32001);
    await until(2000, 'the miss reported', () => /no recorded answer for tools\/call/.test(misses.join('\n')), 10);
  });

  it('replays one chunk a frame, and with --pace at the recorded delays, so that the MCP SDK client loses none of the progress', async () => {
    const progressFile = join(dir, 'progress.cassette');
    const event = (from: string, t: number, msg: object) => JSON.stringify({ from, t, msg: { jsonrpc: '2.0', ...msg } });
    const progress = (t: number, n: number) =>
      event('server', t, { method: 'notifications/progress', params: { progressToken: 7, progress: n, total: 3 } });
    writeFileSync(
      progressFile,
      `${[
        event('client', 0, {
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'rec', version: '1' } },
        }),
        event('server', 5, {
          id: 0,
          result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'recorded', version: '1' } },
        }),
        event('client', 10, { id: 1, method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: { progressToken: 7 } } }),
        progress(20, 1),
        progress(40, 2),
        progress(60, 3),
        event('server', 160, { id: 1, result: { content: [{ type: 'text', text: 'done' }] } }),
      ].join('\n')}\n`,
    );
    // One chunk a frame, paced or not: never two messages in one write.
    const chunks: string[] = [];
    const stream = (await Cassette.load(progressFile)).replay();
    stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
    stream.end(frame({ jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'slow', arguments: {} } }));
    await once(stream, 'end');
    expect(chunks.map((c) => (JSON.parse(c) as { method?: string }).method ?? 'response')).to.deep.equal([
      'notifications/progress',
      'notifications/progress',
      'notifications/progress',
      'response',
    ]);
    // The SDK 1.x client drops progress it reads together with the response: paced as recorded, it gets all of it.
    const client = new Client({ name: 'sdk', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [main, 'replay', progressFile, '--pace'] }));
    try {
      const seen: number[] = [];
      const started = Date.now();
      const result = await client.callTool({ name: 'slow', arguments: {} }, undefined, { onprogress: (p) => seen.push(p.progress) });
      expect((result.content as Array<{ text: string }>)[0]!.text).to.equal('done');
      expect(seen).to.deep.equal([1, 2, 3]);
      // Recorded 150 ms after its request: paced, the response is no sooner.
      expect(Date.now() - started).to.be.at.least(140);
    } finally {
      await client.close();
    }
  });

  it("gives a --config server the safe default environment, and a -- server the host's", async () => {
    const show = ['-e', "process.stderr.write('secret=' + String(process.env.MCP_FRAME_HOST_SECRET))"];
    const config = join(dir, 'env.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { shower: { command: process.execPath, args: show } } }));
    const env = { ...process.env, MCP_FRAME_HOST_SECRET: 'from-the-host' };
    const viaConfig = await cli(['record', '--out', join(dir, 'env1.cassette'), '--config', config, 'shower'], { env });
    expect(viaConfig.stderr).to.include('secret=undefined');
    const direct = await cli(['record', '--out', join(dir, 'env2.cassette'), '--', process.execPath, ...show], { env });
    expect(direct.stderr).to.include('secret=from-the-host');
  });

  it('records a line that is not a frame as invalid, and passes it through untouched', async () => {
    const out = join(dir, 'banner.cassette');
    const banner = fileURLToPath(new URL('../helpers/servers/banner.js', import.meta.url));
    const invalid: FrameError[] = [];
    const c = await connect(
      { command: process.execPath, args: [main, 'record', '--out', out, '--', process.execPath, banner] },
      {
        onSpawn: (conn) => conn.on('invalid', (e: FrameError) => invalid.push(e)),
      },
    );
    await c.request('tools/list');
    await c.close();
    // The client saw the banner and the log line: the proxy passed them on.
    expect(invalid).to.have.length(2);
    expect(invalid[0]!.preview).to.match(/^Booting banner-server/);
    expect(invalid[1]!.preview).to.equal('[info] listing tools');
    const events = parseCassette(readFileSync(out, 'utf8'));
    const bad = events.filter((e) => 'invalid' in e) as Array<{ from: string; code: string; invalid: string }>;
    expect(bad.map((e) => [e.from, e.code, e.invalid])).to.deep.equal([
      ['server', 'INVALID_JSON', invalid[0]!.preview],
      ['server', 'INVALID_JSON', '[info] listing tools'],
    ]);
  });

  it('starts the server in its own process group: a signal to record ends what the server started too', async function () {
    if (process.platform === 'win32') this.skip();
    const out = join(dir, 'group.cassette');
    // A server that leaves a grandchild (as a wrapper such as npx does), and says its pid.
    const proc = spawn(
      process.execPath,
      [`${ROOT}dist/lib/cli/main.js`, 'record', '--out', out, '--', 'sh', '-c', 'sleep 60 & echo "grandchild $!" >&2; exec cat'],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    await until(2000, "the grandchild's pid on stderr", () => /grandchild \d+/.test(stderr), 10);
    const pid = Number(/grandchild (\d+)/.exec(stderr)![1]);
    // A killed process whose parent is gone stays a zombie until something reaps it (PID 1 need not): gone.
    const alive = (): boolean => {
      try {
        process.kill(pid, 0);
      } catch {
        return false;
      }
      const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
      return !/^\d+ \(.*\) Z/.test(stat);
    };
    expect(alive()).to.equal(true);
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    await exited;
    await until(2000, 'the grandchild gone', () => !alive(), 10);
    expect(alive(), 'the grandchild outlived record').to.equal(false);
  });

  it('takes the command from .mcp.json with --config, and says what is wrong with its arguments', async () => {
    const config = join(dir, 'servers.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] } } }));
    const out = join(dir, 'demo.cassette');
    const r = await cli(['record', '--out', out, '--config', config, 'demo'], { stdin: frame({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    expect(r.code).to.equal(0);
    expect(r.stdout).to.equal(frame({ jsonrpc: '2.0', id: 1, result: {} }));
    expect(parseCassette(readFileSync(out, 'utf8')).map((e) => e.from)).to.deep.equal(['client', 'server']);

    // Without --config, the config a host would find, as `call` finds it: ./.mcp.json, then ./.vscode/mcp.json,
    // with ${input:...} values from --input.
    const project = join(dir, 'project');
    mkdirSync(join(project, '.vscode'), { recursive: true });
    writeFileSync(
      join(project, '.vscode/mcp.json'),
      JSON.stringify({
        inputs: [{ id: 'script', type: 'promptString' }],
        servers: { demo: { command: process.execPath, args: ['${input:script}'] } },
      }),
    );
    const found = await cli(['record', '--out', join(dir, 'found.cassette'), '--input', `script=${ROOT}dist/examples/server.js`, 'demo'], {
      cwd: project,
      stdin: frame({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(found.code, found.stderr).to.equal(0);
    expect(found.stdout).to.equal(frame({ jsonrpc: '2.0', id: 1, result: {} }));
    expect(found.stderr).to.include('using .vscode/mcp.json');
    expect((await cli(['record', '--', 'x'])).code).to.equal(2);
    const missing = await cli(['record', '--out', join(dir, 'x.cassette'), '--', 'no-such-command-xyz']);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.match(/cannot start "no-such-command-xyz": command not found/);
    const noFile = await cli(['replay', join(dir, 'absent.cassette')]);
    expect(noFile.code).to.equal(1);
    expect(noFile.stderr).to.match(/absent\.cassette: no such file/);
  });
});

describe('mcp-frame check', () => {
  const dir = tempDir('check');

  it('exits 0 on a clean capture and prints its counts', async () => {
    const path = join(dir, 'clean.ndjson');
    writeFileSync(path, frame({ jsonrpc: '2.0', id: 1, method: 'ping' }) + frame({ jsonrpc: '2.0', id: 1, result: {} }));
    const r = await cli(['check', path]);
    expect(r.code).to.equal(0);
    expect(r.stdout).to.match(/^ndjson, \d+ bytes: 2 messages \(1 request, 0 notifications, 1 response, 0 error responses\)\n/);
    expect(r.stdout.trimEnd().split('\n').at(-1)).to.equal('ok');
  });

  it('exits 1 on a corrupted capture, naming each error with its position, and reads stdin', async () => {
    const input = `${frame({ jsonrpc: '2.0', id: 1, method: 'ping' })}{"broken": \n${frame({ jsonrpc: '2.0', id: 2, result: {} })}`;
    const r = await cli(['check', '-', '--json'], { stdin: input });
    expect(r.code).to.equal(1);
    const report = JSON.parse(r.stdout) as {
      problems: Array<{ code: string; message: number; offset: number }>;
      unmatchedResponses: unknown[];
      unansweredRequests: unknown[];
    };
    expect(report.problems.map((p) => [p.code, p.message, p.offset])).to.deep.equal([
      ['INVALID_JSON', 2, Buffer.byteLength(frame({ jsonrpc: '2.0', id: 1, method: 'ping' }))],
    ]);
    expect(report.unmatchedResponses).to.have.length(1);
    expect(report.unansweredRequests).to.have.length(1);
  });

  it('recognises a cassette, reads other framings with --framing, and rejects unknown ones', async () => {
    const path = join(dir, 'session.cassette');
    writeFileSync(
      path,
      `${JSON.stringify({ from: 'client', t: 0, msg: { jsonrpc: '2.0', id: 1, method: 'ping' } })}\n${JSON.stringify({ from: 'server', t: 1, msg: { jsonrpc: '2.0', id: 1, result: {} } })}\n`,
    );
    const r = await cli(['check', path]);
    expect(r.code).to.equal(0);
    expect(r.stdout).to.match(/^cassette, /);
    const sse = await cli(['check', '--framing', 'sse'], { stdin: 'data: {"jsonrpc":"2.0","method":"n"}\n\n' });
    expect(sse.code).to.equal(0);
    expect((await cli(['check', '--framing', 'xml'], { stdin: '' })).code).to.equal(2);
    const missing = await cli(['check', join(dir, 'nope')]);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.match(/no such file/);
  });
});
