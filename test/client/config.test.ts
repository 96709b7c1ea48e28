import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, checkConfig, listNames, loadConfig, parseConfig, serverNamed } from '../../lib/client/config.js';
import { ROOT } from '../helpers/fixtures.js';
import { cli } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const parse = (config: unknown, env: NodeJS.ProcessEnv = {}) => parseConfig(JSON.stringify(config), '/etc/project/.mcp.json', { env });

describe('loadConfig', () => {
  it("reads the repository's own .mcp.json, with the demo server's cwd taken from the file's folder", async () => {
    const config = await loadConfig(`${ROOT}.mcp.json`);
    expect(config.mcpServers.demo).to.deep.equal({ type: 'stdio', command: 'node', args: ['dist/examples/server.js'], cwd: ROOT.replace(/\/$/, '') });
  });

  it('reads ./.mcp.json by default', async () => {
    const here = process.cwd();
    process.chdir(ROOT);
    try {
      expect(Object.keys((await loadConfig()).mcpServers)).to.include('demo');
    } finally {
      process.chdir(here);
    }
  });

  it('names a missing file', async () => {
    try {
      await loadConfig('/nonexistent/dir/.mcp.json');
      expect.fail('loaded a missing file');
    } catch (err) {
      expect(err).to.be.instanceOf(ConfigError);
      expect((err as ConfigError).message).to.equal('/nonexistent/dir/.mcp.json: no such file');
    }
  });

  it('places a JSON error at its line and column', async () => {
    const dir = tempDir('config');
    const path = join(dir, '.mcp.json');
    writeFileSync(path, '{\n  "mcpServers": {\n    "fs": { "command": "npx", "args": }\n  }\n}\n');
    try {
      await loadConfig(path);
      expect.fail('loaded broken JSON');
    } catch (err) {
      expect((err as Error).message).to.equal(`${path}: not valid JSON at line 3, column 39`);
    }
  });

  it('reads JSONC, as editors do: comments and trailing commas, with positions kept for errors after them', async () => {
    const dir = tempDir('config');
    const path = join(dir, 'mcp.json');
    writeFileSync(
      path,
      '{\n  // the servers\n  "servers": {\n    /* a server */ "fs": { "command": "npx", "args": ["-y", "a//b", "c/*d*/",], },\n  },\n}\n',
    );
    expect((await loadConfig(path)).mcpServers.fs).to.deep.equal({ command: 'npx', args: ['-y', 'a//b', 'c/*d*/'] });
    writeFileSync(path, '{\n  // a comment\n  "servers": { "fs": { "command": } }\n}\n');
    const err = await loadConfig(path).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.equal(`${path}: not valid JSON at line 3, column 35`);
    writeFileSync(path, '  \n// nothing\n');
    expect((await loadConfig(path).catch((e: Error) => e)) as Error).to.have.property(
      'message',
      `${path}: the file is empty: expected an object with "mcpServers" (or "servers")`,
    );
  });

  it('keeps stdio, http and sse entries', () => {
    const config = parse({
      mcpServers: {
        fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'], env: { DEBUG: '1' } },
        remote: { type: 'http', url: 'https://example.test/mcp', headers: { 'X-Team': 'a' } },
        legacy: { type: 'sse', url: 'https://example.test/sse' },
        untyped: { url: 'https://example.test/mcp2' },
      },
    });
    expect(config.mcpServers).to.deep.equal({
      fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'], env: { DEBUG: '1' } },
      remote: { type: 'http', url: 'https://example.test/mcp', headers: { 'X-Team': 'a' } },
      legacy: { type: 'sse', url: 'https://example.test/sse' },
      untyped: { type: 'http', url: 'https://example.test/mcp2' },
    });
  });

  it('expands ${VAR} and ${VAR:-default} in command, args, env, cwd, url and headers', () => {
    const env = { BIN: '/opt/bin', ROOT_DIR: '/data', TOKEN: 's3cret', EMPTY: '' };
    const config = parse(
      {
        mcpServers: {
          a: {
            command: '${BIN}/server',
            args: ['--root', '${ROOT_DIR}/x', '${MISSING:-fallback}', '${EMPTY:-was empty}', 'a${EMPTY}b'],
            env: { API_TOKEN: '${TOKEN}' },
            cwd: '${ROOT_DIR}',
          },
          b: { type: 'http', url: 'https://${HOST:-localhost}:8443/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } },
        },
      },
      env,
    );
    expect(config.mcpServers.a).to.deep.equal({
      command: '/opt/bin/server',
      args: ['--root', '/data/x', 'fallback', 'was empty', 'ab'],
      env: { API_TOKEN: 's3cret' },
      cwd: '/data',
    });
    expect(config.mcpServers.b).to.deep.equal({ type: 'http', url: 'https://localhost:8443/mcp', headers: { Authorization: 'Bearer s3cret' } });
  });

  it('names the server, the field and the variable when a variable is unset', () => {
    const err = configError(() => parse({ mcpServers: { fs: { command: 'npx', args: ['-y', '${FS_ROOT}'] } } }));
    expect([err.server, err.jsonPath, err.variable]).to.deep.equal(['fs', 'mcpServers.fs.args[1]', 'FS_ROOT']);
    expect(err.message).to.equal('/etc/project/.mcp.json: mcpServers.fs.args[1]: variable FS_ROOT is not set (server "fs")');
    const inHeader = configError(() => parse({ mcpServers: { r: { type: 'http', url: 'u', headers: { 'X-Key': '${KEY}' } } } }));
    expect(inHeader.jsonPath).to.equal('mcpServers.r.headers["X-Key"]');
  });

  const shapes: Array<[string, unknown, string]> = [
    ['a top level that is not an object', [], '(top level)'],
    ['no mcpServers (nor servers)', { tools: {} }, 'mcpServers'],
    ['mcpServers not an object', { mcpServers: [] }, 'mcpServers'],
    ['an entry that is not an object', { mcpServers: { a: 'npx' } }, 'mcpServers.a'],
    ['a stdio entry without a command', { mcpServers: { a: { args: [] } } }, 'mcpServers.a.command'],
    ['an empty command', { mcpServers: { a: { command: ' ' } } }, 'mcpServers.a.command'],
    ['a command that is not a string', { mcpServers: { a: { command: ['npx'] } } }, 'mcpServers.a.command'],
    ['args that are not an array', { mcpServers: { a: { command: 'x', args: '-y' } } }, 'mcpServers.a.args'],
    ['an arg that is not a string', { mcpServers: { a: { command: 'x', args: ['a', 'b', 3] } } }, 'mcpServers.a.args[2]'],
    ['an env value that is not a string', { mcpServers: { a: { command: 'x', env: { PORT: 80 } } } }, 'mcpServers.a.env.PORT'],
    ['a cwd that is not a string', { mcpServers: { a: { command: 'x', cwd: 1 } } }, 'mcpServers.a.cwd'],
    ['an unknown type', { mcpServers: { a: { type: 'websocket', url: 'ws://x' } } }, 'mcpServers.a.type'],
    ['an http entry without a url', { mcpServers: { 'my server': { type: 'http' } } }, 'mcpServers["my server"].url'],
  ];
  for (const [label, config, jsonPath] of shapes) {
    it(`rejects ${label}, naming ${jsonPath}`, () => {
      const err = configError(() => parse(config));
      expect(err.jsonPath).to.equal(jsonPath);
      expect(err.message.startsWith(`/etc/project/.mcp.json: ${jsonPath}: `)).to.equal(true);
    });
  }

  describe('names and values a hostile config can hold', () => {
    it('takes __proto__ as an ordinary server name, and finds no server named after an Object method', () => {
      const config = parseConfig('{"mcpServers":{"__proto__":{"command":"a"},"b":{"command":"b"}}}', '/x/.mcp.json', { env: {} });
      expect(Object.getPrototypeOf(config.mcpServers)).to.equal(Object.prototype);
      expect(Object.keys(config.mcpServers)).to.deep.equal(['__proto__', 'b']);
      expect(serverNamed(config, '__proto__')).to.deep.equal({ command: 'a' });
      for (const name of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) expect(serverNamed(config, name), name).to.equal(undefined);
    });

    it('takes ${constructor} as a variable that is not set', () => {
      const err = configError(() => parse({ mcpServers: { a: { command: '${constructor}' } } }));
      expect(err.variable).to.equal('constructor');
    });

    it('places the error in a deeply nested invalid file, without a RangeError', () => {
      const err = configError(() => parseConfig(`{"mcpServers":${'['.repeat(200_000)}`, '/x/.mcp.json'));
      expect(err.message).to.match(/not valid JSON at line 1, column \d+/);
    });

    it('lists at most 20 names when a server is not found', () => {
      const servers = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`server-${i}`, { command: 'x' }]));
      const text = listNames(parse({ mcpServers: servers }));
      expect(text).to.match(/^server-0, server-1, .*server-19 and 4980 more$/);
      expect(text.length).to.be.lessThan(400);
    });
  });

  describe('the formats hosts write, from a fixture per editor', () => {
    const fixture = (path: string): string => `${ROOT}fixtures/config/${path}`;

    it('reads Claude Desktop and Claude Code files (mcpServers, ${VAR} and ${VAR:-default})', async () => {
      const config = await loadConfig(fixture('claude/.mcp.json'), { env: { HOME: '/home/u', GITHUB_TOKEN: 'ghp_x' } });
      expect(config.mcpServers).to.deep.equal({
        filesystem: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/home/u/projects'], env: { LOG_LEVEL: 'info' } },
        github: { type: 'http', url: 'https://api.githubcopilot.com/mcp/', headers: { Authorization: 'Bearer ghp_x' } },
      });
    });

    it("reads Claude Code's ~/.claude.json with its scopes for the folder: local (projects), then the project's .mcp.json, then user", async () => {
      const home = tempDir('claude-home');
      const project = tempDir('claude-project');
      const other = tempDir('claude-other');
      const file = join(home, '.claude.json');
      // As `claude mcp add` writes it: the default (local) scope under the project's absolute path.
      writeFileSync(
        file,
        JSON.stringify({
          numStartups: 3,
          mcpServers: { everywhere: { command: 'user-server' }, shared: { command: 'from-user' } },
          projects: {
            [project]: {
              allowedTools: [],
              mcpServers: { mine: { type: 'http', url: 'https://local.example/mcp' }, shared: { command: 'from-local' } },
            },
            [other]: { allowedTools: [] },
          },
        }),
      );
      writeFileSync(
        join(project, '.mcp.json'),
        JSON.stringify({ mcpServers: { team: { command: 'from-project' }, shared: { command: 'from-project' } } }),
      );
      const here = await loadConfig(file, { env: {}, cwd: project });
      expect(here.mcpServers).to.deep.equal({
        everywhere: { command: 'user-server' },
        shared: { command: 'from-local' },
        team: { command: 'from-project' },
        mine: { type: 'http', url: 'https://local.example/mcp' },
      });
      expect((await loadConfig(file, { env: {}, cwd: other })).mcpServers).to.deep.equal({
        everywhere: { command: 'user-server' },
        shared: { command: 'from-user' },
      });
      // The command line: the local scope for the folder it runs in, and where else a name is when it is not here.
      const demo = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };
      writeFileSync(file, JSON.stringify({ mcpServers: {}, projects: { [project]: { mcpServers: { demo } } } }));
      const found = await cli(['tools', 'demo', '--config', file], { cwd: project });
      expect(found.code, found.stderr).to.equal(0);
      expect(found.stdout).to.match(/^echo\s/m);
      const missing = await cli(['tools', 'demo', '--config', file], { cwd: other });
      expect(missing.code).to.equal(3);
      expect(missing.stderr).to.include('no server "demo"').and.to.include("Claude Code's local scope has servers for").and.to.include(project);
    });

    it("reads Codex's config.toml: stdio and Streamable HTTP tables, headers from variables, a server switched off left out", async () => {
      const dir = tempDir('codex');
      const file = join(dir, 'config.toml');
      writeFileSync(
        file,
        [
          'model = "gpt-5"',
          '',
          '[mcp_servers.files]',
          'command = "npx"',
          'args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]',
          'env = { LOG_LEVEL = "info" }',
          'env_vars = ["HOME"]',
          'startup_timeout_sec = 20',
          '',
          '[mcp_servers.docs]',
          'url = "https://docs.example/mcp"',
          'bearer_token_env_var = "DOCS_TOKEN"',
          'http_headers = { "X-Team" = "platform" }',
          'env_http_headers = { "X-Key" = "DOCS_KEY" }',
          '',
          '[mcp_servers.off]',
          'command = "never"',
          'enabled = false',
        ].join('\n'),
      );
      const config = await loadConfig(file, { env: { HOME: '/home/u', DOCS_TOKEN: 'tok-1', DOCS_KEY: 'key-1' } });
      expect(config.mcpServers).to.deep.equal({
        files: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv'], env: { LOG_LEVEL: 'info', HOME: '/home/u' } },
        docs: { type: 'http', url: 'https://docs.example/mcp', headers: { 'X-Team': 'platform', 'X-Key': 'key-1', Authorization: 'Bearer tok-1' } },
      });
      writeFileSync(file, '[mcp_servers.broken]\ncommand = "x"\nargs = [1,\n');
      const broken = await loadConfig(file).then(
        () => expect.fail('resolved'),
        (e: ConfigError) => e,
      );
      expect(broken).to.be.instanceOf(ConfigError);
      expect(broken.message).to.match(/not valid TOML at line \d+, column \d+/);
      writeFileSync(file, '[mcp_servers.remote]\nurl = "https://r.example/mcp"\nbearer_token_env_var = "not a name"\n');
      const named = await loadConfig(file).catch((e: ConfigError) => e);
      expect((named as ConfigError).jsonPath).to.equal('mcp_servers.remote.bearer_token_env_var');
      // The command line finds a project's .codex/config.toml, as Codex does.
      mkdirSync(join(dir, 'project', '.codex'), { recursive: true });
      writeFileSync(
        join(dir, 'project', '.codex', 'config.toml'),
        `[mcp_servers.demo]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(`${ROOT}dist/examples/server.js`)}]\n`,
      );
      const found = await cli(['tools', 'demo'], { cwd: join(dir, 'project') });
      expect(found.code, found.stderr).to.equal(0);
      expect(found.stdout).to.match(/^echo\s/m);
      expect(found.stderr).to.include('.codex/config.toml');
    });

    it('reads Cursor files: url entries without a type, ${env:NAME}', async () => {
      const config = await loadConfig(fixture('cursor/mcp.json'), { env: { EXAMPLE_TOKEN: 't', EXAMPLE_KEY: 'k' } });
      expect(config.mcpServers).to.deep.equal({
        remote: { type: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer t' } },
        local: { command: 'node', args: ['server.js', '--key', 'k'] },
      });
    });

    it('reads VS Code files: servers, ${workspaceFolder} above .vscode, envFile as dotenv, inputs given', async () => {
      const path = fixture('vscode/.vscode/mcp.json');
      const workspace = fixture('vscode');
      const config = await loadConfig(path, { env: {}, inputs: { 'api-key': 'k-1' } });
      expect(config.mcpServers).to.deep.equal({
        local: {
          type: 'stdio',
          command: 'node',
          args: [`${workspace}/server.js`],
          env: { DB_URL: 'postgres://localhost/app', MODE: 'from-env-file', REGION: 'eu', API_KEY: 'k-1' },
        },
        remote: { type: 'http', url: 'https://mcp.example.com/mcp' },
      });
    });

    it("resolves the editors' predefined variables (${userHome}, ${workspaceFolder} above .cursor, its basename, ${/}, ${pathSeparator})", () => {
      const text = JSON.stringify({
        mcpServers: {
          local: {
            command: '${userHome}${/}bin${pathSeparator}server',
            args: ['--root', '${workspaceFolder}', '--name', '${workspaceFolderBasename}'],
          },
        },
      });
      const config = parseConfig(text, '/work/app/.cursor/mcp.json', { env: {}, home: '/home/ada' });
      expect(config.mcpServers.local).to.deep.equal({ command: '/home/ada/bin/server', args: ['--root', '/work/app', '--name', 'app'] });
    });

    it('names an editor variable it cannot resolve (${file}, ${config:...}, ${command:...}) instead of calling it an unset environment variable', () => {
      for (const [variable, what] of [
        ['${file}', 'an open file'],
        ['${config:python.path}', 'settings'],
        ['${command:pickProcess}', 'commands'],
      ] as const) {
        const text = JSON.stringify({ mcpServers: { local: { command: 'node', args: [variable] } } });
        const problems = checkConfig(text, '/p/.mcp.json', { env: {} });
        expect(problems, variable).to.have.length(1);
        expect(problems[0]!.message).to.include(`${variable} is an editor variable`).and.to.include(what).and.not.to.include('is not set');
        expect(problems[0]!.jsonPath).to.equal('mcpServers.local.args[0]');
      }
    });

    it("reads other hosts' names for a remote server: Windsurf's serverUrl, Gemini CLI's httpUrl, Cline's and Roo's Streamable HTTP types", () => {
      const text = JSON.stringify({
        mcpServers: {
          windsurf: { serverUrl: 'https://w.example/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } },
          gemini: { httpUrl: 'https://g.example/mcp' },
          cline: { type: 'streamableHttp', url: 'https://c.example/mcp' },
          roo: { type: 'streamable-http', url: 'https://r.example/mcp' },
          cursor: { command: 'node', args: ['s.js'], disabled: false, autoApprove: ['x'] },
        },
      });
      expect(parseConfig(text, '/p/.mcp.json', { env: { TOKEN: 't-1' } }).mcpServers).to.deep.equal({
        windsurf: { type: 'http', url: 'https://w.example/mcp', headers: { Authorization: 'Bearer t-1' } },
        gemini: { type: 'http', url: 'https://g.example/mcp' },
        cline: { type: 'http', url: 'https://c.example/mcp' },
        roo: { type: 'http', url: 'https://r.example/mcp' },
        cursor: { command: 'node', args: ['s.js'] },
      });
      const problems = checkConfig(JSON.stringify({ mcpServers: { w: { serverUrl: 3 } } }), '/p/.mcp.json', { env: {} });
      expect(problems.map((p) => p.jsonPath)).to.deep.equal(['mcpServers.w.serverUrl']);
    });

    it('names an input it cannot prompt for, and how to give it, instead of passing ${input:...} on', async () => {
      const err = await loadConfig(fixture('vscode/.vscode/mcp.json'), { env: {} }).then(
        () => expect.fail('resolved'),
        (e: ConfigError) => e,
      );
      expect(err).to.be.instanceOf(ConfigError);
      expect(err.jsonPath).to.equal('servers.local.env.API_KEY');
      expect(err.message).to.include('input "api-key"').and.to.include('--input api-key=VALUE');
    });
  });

  describe('one server at a time', () => {
    const text = JSON.stringify({
      mcpServers: { needsKey: { command: 'x', env: { API_KEY: '${API_KEY}' } }, plain: { command: 'y' }, broken: { command: 3 } },
    });

    it("reads only the server asked for: another entry's unset variable does not stop it", () => {
      expect(parseConfig(text, '/p/.mcp.json', { env: {}, server: 'plain' }).mcpServers).to.deep.equal({ plain: { command: 'y' } });
      expect(() => parseConfig(text, '/p/.mcp.json', { env: {} })).to.throw(ConfigError, /API_KEY is not set/);
    });

    it('reports every problem of the whole file at once with checkConfig', () => {
      const problems = checkConfig(text, '/p/.mcp.json', { env: {} });
      expect(problems.map((p) => p.jsonPath)).to.deep.equal(['mcpServers.needsKey.env.API_KEY', 'mcpServers.broken.command']);
    });
  });
});
