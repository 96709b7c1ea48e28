// The MCP hosts people use, for real: Claude Code, Gemini CLI and mcpc (pinned in peers/) against serve over Streamable
// HTTP and SSE, the gateway, a serve that wants a token, and the bridge, each host headless with a HOME of its own
// and a stand-in model API on 127.0.0.1 that records which tools the host offered the model and asks for one call;
// and each host's own config file read by mcp-frame. Skipped, saying so, where peers/ is not installed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { StdioServerConfig } from '../lib/client/config.js';
import { type ServeHandle, serve } from '../lib/serve/index.js';
import { ROOT } from './helpers/fixtures.js';
import { claude, gemini, type HostRun, hostsMissing, mcpc } from './helpers/hosts.js';
import { type ModelApi, startModelApi } from './helpers/model-api.js';
import { cli } from './helpers/run.js';
import { tempDir } from './helpers/temp.js';
import { note } from './helpers/note.js';

const DEMO: StdioServerConfig = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };
const TOKEN = 'host-test-token-0123456789abcdef';
const BRIDGE = (url: string) => ({ command: process.execPath, args: [`${ROOT}dist/lib/cli/main.js`, 'bridge', '--url', url] });

type Entry = Record<string, unknown>;

describe('real MCP hosts against serve, the gateway and the bridge', function () {
  this.timeout(120_000);
  const missing = hostsMissing();
  let api: ModelApi;
  let home: string;
  const served: ServeHandle[] = [];

  before(function () {
    if (missing.length > 0) {
      note(`skipped: ${missing.join(' and ')} not installed (npm ci --prefix peers; .ci/run does it)`);
      this.skip();
    }
  });
  beforeEach(async () => {
    api = await startModelApi({ tool: 'echo', arguments: { text: 'through the host ✓' } });
    home = tempDir('host-home');
  });
  afterEach(async () => {
    await api?.close();
    for (const s of served.splice(0)) await s.close();
  });

  async function start(
    target: StdioServerConfig | Record<string, StdioServerConfig>,
    options: Parameters<typeof serve>[1] = {},
  ): Promise<ServeHandle> {
    const s = await serve(target, { log: () => undefined, ...options });
    served.push(s);
    return s;
  }

  /** The host offered the model every tool in `tools`, and the one call it made came back with the echo. */
  function called(run: HostRun, tools: string[]): void {
    expect(run.code, `${run.stdout}\n${run.stderr}`).to.equal(0);
    const offered = api.offered.flat();
    expect(offered, `offered: ${JSON.stringify(api.offered)}`).to.include.members(tools);
    expect(api.results.join('\n'), run.stderr.slice(-2000)).to.include('through the host ✓');
  }

  describe('Claude Code', () => {
    const ask = (servers: Record<string, Entry>, allowed: string) =>
      claude(
        [
          '-p',
          'Use the echo tool',
          '--mcp-config',
          JSON.stringify({ mcpServers: servers }),
          '--strict-mcp-config',
          '--allowedTools',
          allowed,
          '--output-format',
          'json',
        ],
        home,
        api,
      );

    it('calls a tool of a stdio server through serve, over Streamable HTTP (type http)', async () => {
      const s = await start(DEMO);
      called(await ask({ mf: { type: 'http', url: s.url } }, 'mcp__mf__echo'), ['mcp__mf__echo', 'mcp__mf__add']);
    });

    it('over the legacy SSE endpoint (type sse)', async () => {
      const s = await start(DEMO);
      called(await ask({ mf: { type: 'sse', url: s.url!.replace(/\/mcp$/, '/sse') } }, 'mcp__mf__echo'), ['mcp__mf__echo']);
    });

    it("through the gateway: both servers' tools, a call routed", async () => {
      const s = await start({ a: DEMO, b: DEMO });
      called(await ask({ gw: { type: 'http', url: s.url } }, 'mcp__gw__a__echo'), ['mcp__gw__a__echo', 'mcp__gw__b__echo']);
    });

    it('with the bearer token serve wants (--token-env), as a header of the entry', async () => {
      const s = await start(DEMO, { token: TOKEN });
      called(await ask({ mf: { type: 'http', url: s.url, headers: { Authorization: `Bearer ${TOKEN}` } } }, 'mcp__mf__echo'), ['mcp__mf__echo']);
    });

    it('through mcp-frame bridge, as a stdio server', async () => {
      const s = await start(DEMO);
      called(await ask({ mf: { type: 'stdio', ...BRIDGE(s.url!) } }, 'mcp__mf__echo'), ['mcp__mf__echo']);
    });

    it('health-checks serve with `claude mcp list`, and mcp-frame reads the same ~/.claude.json', async () => {
      const s = await start(DEMO);
      const file = join(home, '.claude.json');
      writeFileSync(file, JSON.stringify({ mcpServers: { mf: { type: 'http', url: s.url } }, projects: {} }));
      const list = await claude(['mcp', 'list'], home, api);
      expect(list.code, list.stderr).to.equal(0);
      expect(list.stdout).to.match(/mf: .*Connected/);
      const tools = await cli(['tools', 'mf', '--config', file], { cwd: home });
      expect(tools.code, tools.stderr).to.equal(0);
      expect(tools.stdout).to.match(/^echo\s/m);
    });
  });

  describe('Gemini CLI', () => {
    /** ~/.gemini/settings.json with these servers, signed in with an API key. */
    const settings = (servers: Record<string, Entry>): string => {
      mkdirSync(join(home, '.gemini'), { recursive: true });
      const file = join(home, '.gemini', 'settings.json');
      writeFileSync(file, JSON.stringify({ mcpServers: servers, security: { auth: { selectedType: 'gemini-api-key' } } }));
      return file;
    };
    // One model named, so that Gemini CLI asks no routing model first.
    const ask = () => gemini(['-p', 'Use the echo tool', '--yolo', '-m', 'gemini-2.5-pro'], home, api);

    it('calls a tool of a stdio server through serve, over Streamable HTTP (httpUrl), as a 2025-06-18 client', async () => {
      const s = await start(DEMO);
      settings({ mf: { httpUrl: s.url } });
      called(await ask(), ['mcp_mf_echo', 'mcp_mf_add']);
    });

    it('over the legacy SSE endpoint (url)', async () => {
      const s = await start(DEMO);
      settings({ mf: { url: s.url!.replace(/\/mcp$/, '/sse') } });
      called(await ask(), ['mcp_mf_echo']);
    });

    it("through the gateway: it reads one page of tools/list, and sees both servers' tools", async () => {
      const s = await start({ a: DEMO, b: DEMO });
      settings({ gw: { httpUrl: s.url } });
      called(await ask(), ['mcp_gw_a__echo', 'mcp_gw_b__echo']);
    });

    it('with the bearer token serve wants (--token-env), as a header of the entry', async () => {
      const s = await start(DEMO, { token: TOKEN });
      settings({ mf: { httpUrl: s.url, headers: { Authorization: `Bearer ${TOKEN}` } } });
      called(await ask(), ['mcp_mf_echo']);
    });

    it('through mcp-frame bridge, as a stdio server', async () => {
      const s = await start(DEMO);
      settings({ mf: BRIDGE(s.url!) });
      called(await ask(), ['mcp_mf_echo']);
    });

    it('health-checks serve with `gemini mcp list`, and mcp-frame reads the same settings.json', async () => {
      const s = await start(DEMO);
      const file = settings({ mf: { httpUrl: s.url } });
      const list = await gemini(['mcp', 'list'], home, api);
      expect(list.code, list.stderr).to.equal(0);
      expect(`${list.stdout}${list.stderr}`).to.match(/mf: .*Connected/);
      const tools = await cli(['tools', 'mf', '--config', file], { cwd: home });
      expect(tools.code, tools.stderr).to.equal(0);
      expect(tools.stdout).to.match(/^echo\s/m);
    });
  });

  describe('mcpc', () => {
    /** A session of mcpc's to `url` (a server named `name`), used by `body`, closed (its background bridge with it) whatever happens. */
    async function session(url: string, name: string, body: () => Promise<void>): Promise<void> {
      const connected = await mcpc(['connect', url, '@t', '--json'], home);
      try {
        expect(connected.code, connected.stderr).to.equal(0);
        expect((JSON.parse(connected.stdout) as { serverInfo: { name: string } }).serverInfo.name).to.equal(name);
        await body();
      } finally {
        await mcpc(['close', '@t'], home);
      }
    }

    it('lists and calls the tools of a stdio server through serve', async () => {
      const s = await start(DEMO);
      await session(s.url!, 'mcp-frame-demo', async () => {
        const list = await mcpc(['@t', 'tools-list', '--json'], home);
        expect((JSON.parse(list.stdout) as Array<{ name: string }>).map((t) => t.name)).to.include.members(['echo', 'add']);
        const call = await mcpc(['@t', 'tools-call', 'echo', 'text:=through mcpc ✓', '--json'], home);
        expect(JSON.parse(call.stdout)).to.deep.include({ content: [{ type: 'text', text: 'through mcpc ✓' }] });
      });
    });

    it("through the gateway: both servers' tools, a call routed", async () => {
      const s = await start({ a: DEMO, b: DEMO });
      await session(s.url!, 'mcp-frame', async () => {
        const list = await mcpc(['@t', 'tools-list', '--json'], home);
        expect((JSON.parse(list.stdout) as Array<{ name: string }>).map((t) => t.name)).to.include.members(['a__echo', 'b__echo']);
        const call = await mcpc(['@t', 'tools-call', 'b__echo', 'text:=routed', '--json'], home);
        expect(JSON.parse(call.stdout)).to.deep.include({ content: [{ type: 'text', text: 'routed' }] });
      });
    });
  });
});
