// What a new user runs into, through the real binary: a closed pipe, servers without resources, editors' JSONC
// configs, --help everywhere, params from files and stdin, remote servers by URL, JSON output, exit codes that
// follow one table, and error texts that say what happened.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { serve } from '../../lib/serve/serve.js';
import { hostile, legacyHttp } from '../helpers/hostile-http.js';
import { ROOT } from '../helpers/fixtures.js';
import { cli } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

const MAIN = `${ROOT}dist/lib/cli/main.js`;
const DEMO = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };
const crash = fileURLToPath(new URL('../helpers/servers/crash.js', import.meta.url));

describe('the command line, as a new user meets it', function () {
  this.timeout(30_000);
  const dir = tempDir('newcomer');

  it('ends quietly when stdout is closed early (| head), and leaves no server behind', () => {
    const run = spawnSync(
      'bash',
      ['-c', `"${process.execPath}" "${MAIN}" call demo blob | head -c 100 >/dev/null; echo "exit \${PIPESTATUS[0]}" >&2`],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    );
    expect(run.stderr).to.match(/exit 0\n$/);
    expect(run.stderr).not.to.match(/EPIPE|Error|at .*\.js/);
  });

  it('resources and prompts name the request they sent, and say plainly that the server offers none', async () => {
    for (const [action, list] of [
      ['resources', 'resources/list'],
      ['prompts', 'prompts/list'],
    ] as const) {
      const r = await cli([action, 'demo']);
      expect(r.code).to.equal(6);
      expect(r.stderr).to.include(`mcp-frame ${action}: server "demo" offers no ${action} (server "demo" answered ${list} with error -32601`);
      expect(r.stderr).not.to.include('tools/list');
    }
  });

  it('reads .vscode/mcp.json with comments and trailing commas, as VS Code does', async () => {
    const cwd = tempDir('jsonc');
    const vscode = join(cwd, '.vscode');
    spawnSync('mkdir', ['-p', vscode]);
    writeFileSync(
      join(vscode, 'mcp.json'),
      `{\n  // the demo server\n  "servers": {\n    "demo": { "command": ${JSON.stringify(DEMO.command)}, "args": ${JSON.stringify(DEMO.args)}, },\n  },\n}\n`,
    );
    const r = await cli(['tools', 'demo'], { cwd });
    expect(r.code).to.equal(0);
    expect(r.stdout).to.match(/^echo {2}Returns its text unchanged\./);
    writeFileSync(join(cwd, '.mcp.json'), '\n');
    const empty = await cli(['tools', 'demo'], { cwd });
    expect(empty.code).to.equal(3);
    expect(empty.stderr).to.include('.mcp.json: the file is empty');
  });

  it('answers --help and help <command> for every command with its own usage, exit 0', async () => {
    for (const command of [
      'frame',
      'call',
      'tools',
      'resources',
      'prompts',
      'convert',
      'record',
      'replay',
      'check',
      'bridge',
      'serve',
      'check-config',
      'auth',
    ]) {
      const own = command === 'tools' || command === 'resources' || command === 'prompts' ? 'call' : command;
      for (const args of [
        [command, '--help'],
        ['help', command],
        [command, '-h'],
      ]) {
        const r = await cli(args);
        expect(r.code, args.join(' ')).to.equal(0);
        expect(r.stdout, args.join(' ')).to.match(new RegExp(`^usage: mcp-frame ${own}\\b`));
        expect(r.stderr, args.join(' ')).to.equal('');
      }
    }
    // After --, --help belongs to the server's command.
    const passed = await cli(['call', 'tools/list', '--', process.execPath, '-e', 'process.exit(9)', '--help']);
    expect(passed.code).to.equal(4);
  });

  it('follows one exit-code table: record and bridge exit 3 on a config problem, as call and serve do', async () => {
    for (const args of [
      ['record', '--out', join(dir, 'x.jsonl'), '--config', '.mcp.json', 'nope'],
      ['bridge', 'nope'],
      ['call', 'nope'],
      ['serve', 'nope'],
    ]) {
      const r = await cli(args);
      expect(r.code, args[0]).to.equal(3);
      expect(r.stderr, args[0]).to.match(new RegExp(`^mcp-frame ${args[0]}: .*no server "nope"`, 'm'));
    }
  });

  it("names the config's servers when a command that needs one is given none (exit 2)", async () => {
    for (const args of [['record', '--out', join(dir, 'y.jsonl')], ['bridge'], ['call'], ['tools'], ['resources'], ['prompts']]) {
      const r = await cli(args);
      expect(r.code, args[0]).to.equal(2);
      expect(r.stderr, args[0]).to.match(new RegExp(`^mcp-frame ${args[0]}: name a server.*; \\.mcp\\.json has: demo\\b`, 'm'));
    }
  });

  it('serve checks that its command starts before it listens, and exits 3 naming it', async () => {
    const r = await cli(['serve', '--', 'no-such-command-mcp-frame', '--flag']);
    expect(r.code).to.equal(3);
    expect(r.stderr).to.include('cannot start "no-such-command-mcp-frame": command not found on PATH');
    expect(r.stderr).not.to.include('listening');
  });

  it('takes params from a file (@file) and from stdin (-), and an argument value from a file', async () => {
    const params = join(dir, 'params.json');
    const big = 'x'.repeat(300_000);
    writeFileSync(params, JSON.stringify({ name: 'echo', arguments: { text: big } }));
    const fromFile = await cli(['call', 'demo', 'tools/call', `@${params}`]);
    expect(fromFile.code).to.equal(0);
    expect(JSON.parse(fromFile.stdout).content[0].text).to.have.length(300_000);
    const fromStdin = await cli(['call', 'demo', 'tools/call', '-'], { stdin: '{"name":"echo","arguments":{"text":"from stdin"}}' });
    expect(JSON.parse(fromStdin.stdout).content[0].text).to.equal('from stdin');
    const text = join(dir, 'text.txt');
    writeFileSync(text, 'ünïcödé from a file\n');
    const arg = await cli(['call', 'demo', 'echo', '--arg', `text=@${text}`]);
    expect(JSON.parse(arg.stdout).content[0].text).to.equal('ünïcödé from a file\n');
    const literal = await cli(['call', 'demo', 'echo', '--arg', 'text=@@home']);
    expect(JSON.parse(literal.stdout).content[0].text).to.equal('@home');
    const missing = await cli(['call', 'demo', 'tools/call', `@${join(dir, 'nope.json')}`]);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.match(/cannot read params .*nope\.json: no such file/);
    const missingArg = await cli(['call', 'demo', 'echo', '--arg', `text=@${join(dir, 'nope.txt')}`]);
    expect(missingArg.code).to.equal(2);
    const empty = await cli(['call', 'demo', 'tools/call', '-'], { stdin: '' });
    expect(empty.code).to.equal(2);
    expect(empty.stderr).to.include('the params on stdin are empty');
  });

  it('call --url reaches a remote server without a config, with headers from arguments or the environment', async () => {
    const served = await serve(DEMO, { port: 0, token: 'tok-0123456789abcdef', log: () => undefined });
    try {
      const url = served.url!;
      const denied = await cli(['tools', '--url', url]);
      expect(denied.code).to.equal(7);
      expect(denied.stderr).to.match(/^mcp-frame tools: AUTH_REQUIRED: /m);
      const withEnv = await cli(['tools', '--url', url, '--header-env', 'Authorization=DEMO_AUTH'], {
        env: { ...process.env, DEMO_AUTH: 'Bearer tok-0123456789abcdef' },
      });
      expect(withEnv.code).to.equal(0);
      expect(withEnv.stdout).to.match(/^echo /);
      const withHeader = await cli(['call', '--url', url, '--header', 'Authorization: Bearer tok-0123456789abcdef', 'echo', '--arg', 'text=hi']);
      expect(JSON.parse(withHeader.stdout).content[0].text).to.equal('hi');
      // A wrong token given in a header is said to be refused, not missing, and no sign-in is tried.
      const wrong = await cli(['tools', '--url', url, '--header', 'Authorization: Bearer tok-wrong-0123456789']);
      expect(wrong.code).to.equal(7);
      expect(wrong.stderr).to.include('refused the credentials given in the Authorization header');
      expect(wrong.stderr).to.not.include('tok-wrong');
      const unset = await cli(['tools', '--url', url, '--header-env', 'Authorization=NOT_SET_ANYWHERE']);
      expect(unset.code).to.equal(3);
      expect(unset.stderr).to.include('variable NOT_SET_ANYWHERE is not set');
    } finally {
      await served.close();
    }
  });

  it('takes an http(s) URL where a server name goes, as the Inspector and mcp-remote do: tools, call and bridge', async () => {
    const served = await serve(DEMO, { port: 0, log: () => undefined });
    try {
      const url = served.url!;
      const tools = await cli(['tools', url]);
      expect(tools.code, tools.stderr).to.equal(0);
      expect(tools.stdout).to.match(/^echo /);
      const call = await cli(['call', url, 'echo', '--arg', 'text=in place']);
      expect(call.code, call.stderr).to.equal(0);
      expect(JSON.parse(call.stdout).content[0].text).to.equal('in place');
      const host = new Client({ name: 'stdio-only-host', version: '1.0.0' });
      await host.connect(new StdioClientTransport({ command: process.execPath, args: [`${ROOT}dist/lib/cli/main.js`, 'bridge', url] }));
      try {
        expect((await host.listTools()).tools.map((t) => t.name)).to.include('echo');
      } finally {
        await host.close();
      }
      // A host that ends its input while its first request is still in flight: the bridge exits (it used to keep
      // a socket of a request sent after closing, and never exit).
      const init = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'h', version: '1' } },
      });
      const ended = await cli(['bridge', url], { stdin: `${init}\n` });
      expect(ended.code, ended.stderr).to.equal(0);
      // A name that is no URL is still looked up in the config.
      expect((await cli(['tools', 'not-a-url-or-server'])).code).to.equal(3);
    } finally {
      await served.close();
    }
  });

  it('says an unknown option plainly, with the nearest known one, and the usage line only (exit 2)', async () => {
    const typo = await cli(['call', 'demo', '--tiemout', '5']);
    expect(typo.code).to.equal(2);
    expect(typo.stderr).to.equal(
      'mcp-frame call: unknown option --tiemout; did you mean --timeout?\nusage: mcp-frame call <server> [method [params-json | @file | -]] [options]\n',
    );
    const far = await cli(['serve', '--zzzzzz', '--', 'x']);
    expect(far.code).to.equal(2);
    expect(far.stderr).to.match(/^mcp-frame serve: unknown option --zzzzzz\nusage: /);
  });

  it("passes this process's value of a variable with -e KEY alone, so that no secret goes on argv", async () => {
    const steps = ['--', process.execPath, `${ROOT}dist/test/helpers/servers/steps.js`];
    const params = (name: string): string => JSON.stringify({ name: 'env', arguments: { name } });
    const passed = await cli(['call', 'tools/call', params('MCP_FRAME_PASSED'), '-e', 'MCP_FRAME_PASSED', ...steps], {
      env: { ...process.env, MCP_FRAME_PASSED: 'from-here' },
    });
    expect(passed.code, passed.stderr).to.equal(0);
    expect(JSON.parse(passed.stdout).content[0].text).to.equal('from-here');
    const unset = await cli(['call', 'tools/call', params('MCP_FRAME_UNSET'), '-e', 'MCP_FRAME_UNSET', ...steps]);
    expect(unset.code).to.equal(3);
    expect(unset.stderr).to.include('variable MCP_FRAME_UNSET is not set here');
  });

  it('prints listings as JSON with --json, and no informational lines', async () => {
    const r = await cli(['tools', 'demo', '--json']);
    expect(r.code).to.equal(0);
    expect((JSON.parse(r.stdout) as Array<{ name: string }>).map((t) => t.name)).to.deep.equal(['echo', 'add', 'blob']);
    expect(r.stderr).to.equal('');
  });

  it('replays a cassette recorded with params {} to a request sent without params', async () => {
    const cassette = join(dir, 'tools.jsonl');
    const recorded = await cli(['tools', '--', process.execPath, MAIN, 'record', '--out', cassette, '--', ...[DEMO.command, ...DEMO.args]]);
    expect(recorded.code).to.equal(0);
    expect(readFileSync(cassette, 'utf8')).to.include('"method":"tools/list","params":{}');
    const replayed = await cli(['call', 'tools/list', '--', process.execPath, MAIN, 'replay', cassette]);
    expect(replayed.code).to.equal(0);
    expect(JSON.parse(replayed.stdout).tools.map((t: { name: string }) => t.name)).to.deep.equal(['echo', 'add', 'blob']);
  });

  it('says a server that dies while starting did not start, not which probe it was sent', async () => {
    const r = await cli(['tools', '--', process.execPath, crash]);
    expect(r.code).to.equal(4);
    expect(r.stderr).to.match(/^mcp-frame tools: the server did not start: server "node" exited with code 3; its last stderr lines: .*DEMO_API_KEY/m);
    expect(r.stderr).not.to.include('server/discover');
  });

  it("quotes an HTTP error's reason whole, not cut mid-word at 80 characters", async () => {
    const reason = 'the gateway refused the call because the upstream tool server did not answer within its deadline of 30 seconds; try again later';
    const server = await hostile(
      legacyHttp((_req, res) => void res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: reason } }))),
    );
    try {
      const r = await cli(['call', '--url', server.url, 'tools/call', '{"name":"slow"}']);
      expect(r.code).to.equal(4);
      expect(r.stderr).to.include(`HTTP 502: ${reason}`);
    } finally {
      await server.close();
    }
  });

  it('check finds the framing of a Content-Length capture by itself', async () => {
    const r = await cli(['check', `${ROOT}fixtures/wire/cl-basic.content-length`]);
    expect(r.stdout).to.match(/^content-length, /);
  });

  it('resolves a bare case name under fixtures/frame/, as a case is named', () => {
    const byName = spawnSync(`${ROOT}your_program.sh`, ['mcp-frame', 'unicode'], { encoding: 'utf8' });
    expect(byName.status).to.equal(0);
    expect(JSON.parse(byName.stdout)).to.deep.equal(JSON.parse(readFileSync(`${ROOT}fixtures/frame/unicode/expected.json`, 'utf8')));
  });
});
