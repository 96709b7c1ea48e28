import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCallArgs } from '../../lib/cli/call.js';
import { serve } from '../../lib/serve/index.js';
import { CliError } from '../../lib/cli/io.js';
import { ROOT } from '../helpers/fixtures.js';
import { gone } from '../helpers/processes.js';
import { cli } from '../helpers/run.js';
import { unprintable } from '../helpers/unprintable.js';
import { tempDir } from '../helpers/temp.js';
import { until } from '../helpers/poll.js';

const testServer = (name: string): { command: string; args: string[] } => ({
  command: process.execPath,
  args: [fileURLToPath(new URL(`../helpers/servers/${name}.js`, import.meta.url))],
});

describe('mcp-frame call', () => {
  const dir = tempDir('call');
  const config = join(dir, 'servers.json');
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        crash: testServer('crash'),
        banner: testServer('banner'),
        remote: { type: 'http', url: 'http://127.0.0.1:1' },
        hang: { ...testServer('hostile'), args: [...testServer('hostile').args, 'hang'] },
        secrets: { ...testServer('hostile'), args: [...testServer('hostile').args, 'secrets'] },
      },
    }),
  );

  it('lists the tools of a server in ./.mcp.json, one line each, after the handshake', async () => {
    const r = await cli(['call', 'demo']);
    expect(r.code).to.equal(0);
    expect(r.stdout.split('\n')).to.deep.equal([
      'echo  Returns its text unchanged.',
      'add   Adds two numbers.',
      'blob  Returns `bytes` deterministic pseudo-random bytes as a base64 resource, with their SHA-256.',
      '',
    ]);
    expect(r.stderr).to.match(
      /^mcp-frame call: using \.mcp\.json\nmcp-frame call: connected to mcp-frame-demo 0\.1\.0 \(protocol 2025-06-18, legacy era, pid \d+\)\n$/,
    );
  });

  it('calls a method with JSON params and prints the result as JSON', async () => {
    const r = await cli(['call', 'demo', 'tools/call', '{"name":"add","arguments":{"a":1.5,"b":2}}']);
    expect(r.code).to.equal(0);
    expect(JSON.parse(r.stdout)).to.deep.equal({ content: [{ type: 'text', text: '3.5' }], structuredContent: { sum: 3.5 } });
  });

  it('traces every frame in both directions with --trace', async () => {
    const r = await cli(['call', 'demo', 'ping', '--trace']);
    expect(r.code).to.equal(0);
    // Every stderr line starts with the command that wrote it, trace lines too.
    expect(
      r.stderr
        .trimEnd()
        .split('\n')
        .filter((l) => !l.startsWith('mcp-frame call: ')),
    ).to.deep.equal([]);
    const frames = r.stderr
      .split('\n')
      .map((l) => l.replace(/^mcp-frame call: /, ''))
      .filter((l) => /^[→←] \d+ B /.test(l));
    // The era probe (the demo server is legacy: -32601), initialize and its answer, initialized, the ping.
    expect(frames.map((l) => l.slice(0, 1))).to.deep.equal(['→', '←', '→', '←', '→', '→', '←']);
    expect(frames[0]).to.match(/^→ \d+ B \{"jsonrpc":"2\.0","id":1,"method":"server\/discover"/);
    expect(frames[1]).to.match(/^← \d+ B \{"jsonrpc":"2\.0","id":1,"error":\{"code":-32601/);
    expect(frames[2]).to.match(/^→ \d+ B \{"jsonrpc":"2\.0","id":2,"method":"initialize"/);
    expect(r.stderr).to.include('mcp-frame call: [demo stderr] mcp-frame demo server');
  });

  it('reads another config with --config and warns about stray stdout lines', async () => {
    const r = await cli(['call', 'banner', '--config', config]);
    expect(r.code).to.equal(0);
    expect(r.stdout).to.equal('hello  Says hello.\n');
    expect(r.stderr).to.match(/skipped output from the server that is not a message: INVALID_JSON/);
  });

  const failures: Array<[string, string[], number, RegExp]> = [
    ['a server named after an Object method', ['call', 'constructor'], 3, /no server "constructor" in \.mcp\.json; it has: demo/],
    ['an unknown server', ['call', 'nope'], 3, /no server "nope" in \.mcp\.json; it has: demo/],
    ['a missing config', ['call', 'demo', '--config', '/nonexistent/.mcp.json'], 3, /\/nonexistent\/\.mcp\.json: no such file/],
    ['an error response', ['call', 'demo', 'no/such'], 6, /server "demo" answered no\/such with error -32601/],
    ['a server that exits at once', ['call', 'crash', '--config', config], 4, /server "crash" exited with code 3.*DEMO_API_KEY is not set/],
    ['an http server that cannot be reached', ['call', 'remote', '--config', config], 4, /cannot reach "remote"/],
    ['params that are not JSON', ['call', 'demo', 'tools/call', '{nope'], 2, /params are not JSON \(column 2\)/],
    ["no server name, naming the config's servers", ['call'], 2, /name a server \(or give --url, or -- <command>\); \.mcp\.json has: demo\b/],
    ['no server name for tools', ['tools'], 2, /name a server \(or give --url, or -- <command>\); \.mcp\.json has: demo\b/],
    [
      'a server named twice, by name and --url',
      ['call', 'demo', 'tools/list', '--url', 'http://127.0.0.1:9/mcp'],
      2,
      /--url names the server, so "demo" would be the method/,
    ],
    [
      'a mistyped tool name without --arg',
      ['call', 'demo', 'ecoh'],
      2,
      /no method or tool "ecoh" \(did you mean "echo"\?\); the server has: echo, add, blob/,
    ],
    [
      'a mistyped tool name with --arg',
      ['call', 'demo', 'ecoh', '--arg', 'text=hi'],
      2,
      /no tool "ecoh" \(did you mean "echo"\?\); the server has: echo, add, blob/,
    ],
    ['an extra argument', ['call', 'demo', 'tools/list', '{}', 'more'], 2, /unexpected argument "more"/],
    ['a repeated --arg', ['call', 'demo', 'echo', '--arg', 'text=a', '--arg', 'text=b'], 2, /--arg text is given twice/],
    ['an --arg its schema cannot take', ['call', 'demo', 'add', '--arg', 'a=one', '--arg', 'b=2'], 2, /--arg a: expected number, got "one"/],
  ];
  for (const [label, args, code, pattern] of failures) {
    it(`exits ${code} with one clear line for ${label}`, async () => {
      const r = await cli(args);
      expect(r.code).to.equal(code);
      expect(r.stdout).to.equal('');
      const lines = r.stderr
        .trimEnd()
        .split('\n')
        .filter((l) => !l.startsWith('mcp-frame call: connected to') && !l.startsWith('mcp-frame call: using'));
      expect(lines[0]).to.match(pattern);
      if (code !== 2) expect(lines).to.have.length(1);
    });
  }

  /** `call hang` on the hostile server that ignores the end of its stdin, once its request is out: the process, and the server's pid. */
  async function hanging(): Promise<{ proc: ReturnType<typeof spawn>; stderr: () => string; exited: Promise<number | null>; pid: number }> {
    const proc = spawn(process.execPath, [`${ROOT}dist/lib/cli/main.js`, 'call', 'hang', 'hang', '--config', config, '--trace'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => proc.on('close', resolve));
    await until(5000, 'the hang request on the wire', () => /→ \d+ B .*"method":"hang"/.test(stderr), 25);
    const pid = Number(/hostile hang pid (\d+)/.exec(stderr)?.[1]);
    expect(pid, stderr).to.be.greaterThan(0);
    return { proc, stderr: () => stderr, exited, pid };
  }

  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    it(`on ${signal}: says so at once, cancels what is in flight, closes a server that ignores the end of its stdin, exits ${code}`, async function () {
      this.timeout(15_000);
      const run = await hanging();
      run.proc.kill(signal);
      expect(await run.exited).to.equal(code);
      expect(run.stderr()).to.include(`mcp-frame call: ${signal}: closing the server (again to stop at once)`);
      // The server was told, before its stdin closed, that the request it holds is cancelled.
      expect(run.stderr()).to.match(/→ \d+ B .*"method":"notifications\/cancelled".*"requestId":\d+/);
      expect(await gone(run.pid)).to.equal(true);
    });
  }

  it('on a second Ctrl-C: kills the server at once rather than waiting out its grace period', async function () {
    this.timeout(15_000);
    const run = await hanging();
    const started = Date.now();
    run.proc.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 200));
    run.proc.kill('SIGINT');
    expect(await run.exited).to.equal(130);
    // The first alone waits 2 s for a server that ignores the end of its stdin.
    expect(Date.now() - started).to.be.lessThan(1500);
    expect(await gone(run.pid)).to.equal(true);
  });

  it('exits promptly after a request timeout, and the server is closed on the way out', async () => {
    const started = Date.now();
    const r = await cli(['call', 'hang', 'hang', '--config', config, '--timeout', '300', '--trace']);
    const took = Date.now() - started;
    expect(r.code).to.equal(5);
    expect(r.stderr).to.match(/request hang timed out after 300 ms/);
    // Without exiting at once it waits out the grace period (2 s) of a server that ignores stdin EOF.
    expect(took).to.be.lessThan(1500);
    const pid = Number(/hostile hang pid (\d+)/.exec(r.stderr)?.[1]);
    expect(pid, r.stderr).to.be.greaterThan(0);
    expect(await gone(pid)).to.equal(true);
  });

  it('says when it fell back to the HTTP+SSE transport, and names the path and both requests when neither transport answered', async () => {
    const bridge = await serve({ command: process.execPath, args: [`${ROOT}dist/examples/server.js`] }, { log: () => undefined });
    try {
      const base = bridge.url!.replace(/\/mcp$/, '');
      const sse = await cli(['tools', '--url', `${base}/sse`]);
      expect(sse.code, sse.stderr).to.equal(0);
      expect(sse.stderr).to.match(/connected to mcp-frame-demo .*, over the deprecated HTTP\+SSE transport: Streamable HTTP was refused\)/);
      const native = await cli(['tools', '--url', bridge.url!]);
      expect(native.stderr).to.not.include('HTTP+SSE');
      const wrong = await cli(['tools', '--url', `${base}/wrong?key=abc`]);
      expect(wrong.code).to.equal(4);
      expect(wrong.stderr).to.include('answered POST /wrong with HTTP 404');
      expect(wrong.stderr).to.include('answered GET /wrong with HTTP 404 (the deprecated HTTP+SSE transport, tried next)');
      expect(wrong.stderr).to.include("is /wrong the server's MCP endpoint?");
      expect(wrong.stderr).to.not.include('key=abc');
    } finally {
      await bridge.close();
    }
  });

  it('uses ./.vscode/mcp.json when there is no ./.mcp.json, says so, and takes --input for its inputs', async () => {
    const workspace = tempDir('vscode');
    mkdirSync(join(workspace, '.vscode'));
    const entry = { type: 'stdio', command: process.execPath, args: [`${ROOT}dist/examples/server.js`], env: { KEY: '${input:key}' } };
    writeFileSync(
      join(workspace, '.vscode', 'mcp.json'),
      JSON.stringify({ inputs: [{ id: 'key', type: 'promptString' }], servers: { demo: entry } }),
    );
    const missing = await cli(['call', 'demo'], { cwd: workspace });
    expect(missing.code).to.equal(3);
    expect(missing.stderr).to.match(/input "key" has no value here .*--input key=VALUE/);
    const r = await cli(['call', 'demo', '--input', 'key=k-1'], { cwd: workspace });
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.match(/^mcp-frame call: using \.vscode\/mcp\.json\n/);
    expect(r.stdout).to.match(/^echo /);
  });

  it('check-config reports every problem of a file at once', async () => {
    const file = join(dir, 'broken.json');
    writeFileSync(
      file,
      JSON.stringify({ mcpServers: { a: { command: 'x', args: ['${NOT_SET_ANYWHERE_1}'] }, b: { command: 4 }, c: { command: 'ok' } } }),
    );
    const r = await cli(['check-config', file]);
    expect(r.code).to.equal(1);
    expect(r.stdout.trimEnd().split('\n')).to.have.length(2);
    expect(r.stdout)
      .to.match(/mcpServers\.a\.args\[0\]: variable NOT_SET_ANYWHERE_1 is not set/)
      .and.to.match(/mcpServers\.b\.command: expected a string/);
    expect((await cli(['check-config', `${ROOT}.mcp.json`])).code).to.equal(0);
  });

  describe('shortcuts, tools and exit codes', () => {
    const everything = ['--', process.execPath, `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'];

    it('lists tools, resources and prompts, here of an ad hoc server started with --', async function () {
      this.timeout(30_000);
      const tools = await cli(['tools', ...everything]);
      expect(tools.code, tools.stderr).to.equal(0);
      expect(tools.stdout).to.match(/^echo\s+\S/m);
      const resources = await cli(['resources', ...everything]);
      expect(resources.code, resources.stderr).to.equal(0);
      expect(resources.stdout).to.match(/^\S+:\/\/\S+/m);
      const prompts = await cli(['prompts', ...everything]);
      expect(prompts.code, prompts.stderr).to.equal(0);
      expect(prompts.stdout.trim().split('\n').length).to.be.greaterThan(0);
      const demo = await cli(['tools', 'demo']);
      expect(demo.stdout.split('\n')[0]).to.match(/^echo\s+Returns its text unchanged\.$/);
    });

    it('lists resource templates beside resources, reads a resource by its URI, and gets a prompt with --arg values', async function () {
      this.timeout(30_000);
      const [dashdash, ...server] = everything;
      const listed = await cli(['resources', ...everything]);
      expect(listed.stdout).to.match(/^demo:\/\/resource\/dynamic\/text\/\{resourceId\}\s+\(template\) /m);
      const read = await cli(['resources', 'demo://resource/dynamic/text/1', dashdash!, ...server]);
      expect(read.code, read.stderr).to.equal(0);
      const contents = (JSON.parse(read.stdout) as { contents: Array<{ uri: string; text: string }> }).contents;
      expect(contents[0]!.uri).to.equal('demo://resource/dynamic/text/1');
      expect(contents[0]!.text).to.match(/^Resource 1: /);
      const prompt = await cli(['prompts', 'args-prompt', '--arg', 'city=Paris', dashdash!, ...server]);
      expect(prompt.code, prompt.stderr).to.equal(0);
      expect(JSON.stringify(JSON.parse(prompt.stdout))).to.include('Paris');
      const missing = await cli(['prompts', 'args-prompt', dashdash!, ...server]);
      expect(missing.code).to.equal(2);
      expect(missing.stderr).to.include('prompt "args-prompt" needs --arg city=...');
      const unknown = await cli(['prompts', 'no-such-prompt', dashdash!, ...server]);
      expect(unknown.code).to.equal(2);
      expect(unknown.stderr).to.match(/no prompt "no-such-prompt"; the server has: .*args-prompt/);
    });

    it('calls a tool with --arg values, JSON where they parse, and gives -e to an ad hoc server', async () => {
      const r = await cli(['call', 'echo', '--arg', 'text=ünï 42', '-e', 'DEMO=1', '--', process.execPath, `${ROOT}dist/examples/server.js`]);
      expect(r.code, r.stderr).to.equal(0);
      expect(JSON.parse(r.stdout)).to.deep.equal({ content: [{ type: 'text', text: 'ünï 42' }] });
      const sum = await cli(['call', 'demo', 'add', '--arg', 'a=40', '--arg', 'b=2']);
      expect(JSON.parse(sum.stdout).structuredContent).to.deep.equal({ sum: 42 });
    });

    it('names a missing or unknown argument before anything is sent', async () => {
      const missing = await cli(['call', 'demo', 'add', '--arg', 'a=1']);
      expect(missing.code).to.equal(2);
      expect(missing.stderr).to.match(/tool "add" needs --arg b=\.\.\./);
      const unknown = await cli(['call', 'demo', 'echo', '--arg', 'text=x', '--arg', 'colour=red']);
      expect(unknown.code).to.equal(2);
      expect(unknown.stderr).to.match(/tool "echo" takes no argument "colour"; it takes: text/);
      const noTool = await cli(['call', 'demo', 'nope', '--arg', 'a=1']);
      expect(noTool.code).to.equal(2);
      expect(noTool.stderr).to.match(/no tool "nope"; the server has: echo, add, blob/);
    });

    it('exits 1 for a tool result with isError, printing it, in both forms', async () => {
      const short = await cli(['call', 'demo', 'blob', '--arg', 'bytes=-1']);
      expect(short.code).to.equal(1);
      expect(JSON.parse(short.stdout)).to.deep.include({ isError: true });
      const long = await cli(['call', 'demo', 'tools/call', '{"name":"blob","arguments":{"bytes":-1}}']);
      expect(long.code).to.equal(1);
      expect(JSON.parse(long.stdout)).to.deep.include({ isError: true });
    });

    it('hints that a method name is really a tool name, naming its required arguments', async () => {
      const r = await cli(['call', 'demo', 'echo']);
      // A usage error (the table's 2: a tool argument missing), not the server's JSON-RPC error.
      expect(r.code).to.equal(2);
      expect(r.stderr).to.match(/echo is a tool: try mcp-frame call demo echo --arg text=\.\.\./);
    });

    it('calls a tool that needs no arguments by its name alone', async () => {
      const r = await cli(['call', 'demo', 'blob']);
      expect(r.code).to.equal(0);
      expect(JSON.parse(r.stdout).structuredContent).to.deep.include({ bytes: 1024 * 1024 });
    });

    it('types --arg values by the schema: a string stays a string, an integer is parsed', async () => {
      const echoed = await cli(['call', 'demo', 'echo', '--arg', 'text=123']);
      expect(echoed.code).to.equal(0);
      expect(JSON.parse(echoed.stdout).content[0].text).to.equal('123');
      const blob = await cli(['call', 'demo', 'blob', '--arg', 'bytes=3']);
      expect(JSON.parse(blob.stdout).structuredContent).to.deep.include({ bytes: 3 });
      const bad = await cli(['call', 'demo', 'blob', '--arg', 'bytes=1.5']);
      expect(bad.code).to.equal(2);
      expect(bad.stderr).to.match(/--arg bytes: expected integer, got "1\.5"/);
    });

    it('prints errors as JSON objects with --json', async () => {
      const r = await cli(['call', 'nope', '--json']);
      expect(r.code).to.equal(3);
      const line = r.stderr.trimEnd().split('\n').at(-1)!;
      expect(JSON.parse(line)).to.deep.include({ error: { command: 'call', message: 'no server "nope" in .mcp.json; it has: demo', exitCode: 3 } });
    });
  });

  it('prints its version', async () => {
    const r = await cli(['--version']);
    expect(r.code).to.equal(0);
    expect(r.stdout).to.equal(`${JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')).version}\n`);
  });

  it("escapes and redacts a server's stderr in the error line", async () => {
    const r = await cli(['call', 'secrets', '--config', config]);
    expect(r.code).to.equal(4);
    expect(r.stderr).to.not.include('sk-live-0123456789abcdef').and.to.not.include('hunter2');
    expect(unprintable(r.stderr, '\n')).to.deep.equal([]);
    expect(r.stderr).to.include('\\u001b]0;owned title');
  });

  it('says how to skip the era probe a stdio server ignores, and --protocol skips it', async () => {
    const ignoring = ['--', process.execPath, `${ROOT}dist/test/helpers/servers/ignores-probe.js`];
    const slow = await cli(['call', 'tools/call', '{"name":"x"}', ...ignoring]);
    expect(slow.code, slow.stderr).to.equal(0);
    expect(slow.stderr).to.match(/finding the server's era took \d+ ms .*; --protocol 2025-06-18 skips that/);
    const started = Date.now();
    const fast = await cli(['call', 'tools/call', '{"name":"x"}', '--protocol', '2025-11-25', ...ignoring]);
    expect(fast.code, fast.stderr).to.equal(0);
    expect(JSON.parse(fast.stdout)).to.deep.include({ content: [{ type: 'text', text: 'legacy' }] });
    expect(fast.stderr).to.not.include('--protocol');
    expect(Date.now() - started).to.be.below(2000);
  });

  it('parses its arguments', () => {
    expect(parseCallArgs(['s', 'm', '{"a":1}', '--trace', '--config', 'c.json', '--timeout', '500'])).to.deep.equal({
      server: 's',
      command: undefined,
      env: {},
      method: 'm',
      params: { a: 1 },
      toolArgs: undefined,
      config: 'c.json',
      inputs: {},
      trace: true,
      timeoutMs: 500,
      protocolVersion: undefined,
      json: false,
      auth: {
        noBrowser: false,
        callbackPort: undefined,
        authTimeoutMs: 300_000,
        authorizeParams: {},
        client: undefined,
        noResource: false,
        deviceCode: false,
      },
    });
    expect(
      parseCallArgs(['echo', '--arg', 'text=hi', '--arg', 'n=3', '--arg', 'o={"a":[1]}', '-e', 'K=v', '--', 'node', 'server.js']),
    ).to.deep.include({
      server: undefined,
      command: ['node', 'server.js'],
      env: { K: 'v' },
      method: 'echo',
      // As given: typed later, by the tool's input schema.
      toolArgs: { text: 'hi', n: '3', o: '{"a":[1]}' },
    });
    expect(() => parseCallArgs(['s', '-e', 'K=v'])).to.throw(CliError, /-e is for a server started with --/);
    expect(() => parseCallArgs(['s', 'echo', '{}', '--arg', 'a=1'])).to.throw(CliError, /not both/);
    expect(() => parseCallArgs(['s', 'm'], 'tools')).to.throw(CliError, /tools takes a server and no method/);
    expect(() => parseCallArgs(['s', '--timeout', '0'])).to.throw(/--timeout takes a positive whole number/);
    expect(() => parseCallArgs(['s', '--timeout=-5'])).to.throw(/--timeout takes a positive whole number/);
    expect(parseCallArgs(['s', '--protocol', '2025-06-18']).protocolVersion).to.equal('2025-06-18');
    expect(parseCallArgs(['s', '--protocol', 'auto']).protocolVersion).to.equal(undefined);
    expect(() => parseCallArgs(['s', '--protocol', 'legacy'])).to.throw(CliError, /--protocol takes auto or a revision \(2026-07-28, 2025-11-25/);
    expect(() => parseCallArgs(['s', '--bogus'])).to.throw(CliError, /^unknown option --bogus\nusage: mcp-frame call /);
    for (const bad of ['[1]', '"text"', '3', 'null'])
      expect(() => parseCallArgs(['s', 'm', bad]), bad).to.throw(CliError, /params must be a JSON object/);
  });
});
