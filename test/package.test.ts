import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { exportedNames } from './helpers/exports.js';
import { ROOT } from './helpers/fixtures.js';
import { note } from './helpers/note.js';

// A change to the public API shows up here as a diff.
const ENTRY_POINTS = {
  'mcp-frame': {
    file: 'index.ts',
    names: [
      'printable',
      'redactMessage',
      'safeLine',
      'ContentLengthDecoder',
      'DEFAULT_MAX_DEPTH',
      'DEFAULT_MAX_MESSAGE_BYTES',
      'DecodeOptions',
      'DecodeSink',
      'DecoderLimits',
      'EncoderSettings',
      'FRAMINGS',
      'FRAMING_NAMES',
      'FrameConverter',
      'FrameConverterOptions',
      'FrameDecoder',
      'FrameDecoderCore',
      'FrameDecoderOptions',
      'FrameEncoder',
      'FrameEncoderCore',
      'FrameEncoderOptions',
      'FrameError',
      'FrameErrorCode',
      'FrameErrorPosition',
      'FramedEvent',
      'Framing',
      'FramingName',
      'JsonRpcBatch',
      'JsonRpcErrorObject',
      'JsonRpcErrorResponse',
      'JsonRpcId',
      'JsonRpcMessage',
      'JsonRpcNotification',
      'JsonRpcRequest',
      'JsonRpcResponse',
      'JsonRpcSuccess',
      'NdjsonDecoder',
      'SseDecoder',
      'SseEventFields',
      'VERSION',
      'contentLengthFraming',
      'formatEvent',
      'frame',
      'frameContentLength',
      'frameProblem',
      'frameSse',
      'framingByName',
      'isErrorResponse',
      'isJsonRpcMessage',
      'isNotification',
      'isRequest',
      'isResponse',
      'jsonRpcProblem',
      'ndjson',
      'parseFrame',
      'preview',
      'redact',
      'sseFraming',
    ],
  },
  'mcp-frame/client': {
    file: 'client/index.ts',
    names: [
      'ListenFilter',
      'MAX_INPUT_ROUNDS',
      'Subscription',
      'AuthChallenge',
      'AuthEvent',
      'AuthOptions',
      'AuthRecord',
      'AuthStore',
      'AuthorizeRequest',
      'CrossAppAccessOptions',
      'DevicePrompt',
      'FileAuthStore',
      'FileAuthStoreOptions',
      'JwtBearerContext',
      'JwtBearerGrant',
      'LoopbackAuthorizer',
      'LoopbackAuthorizerOptions',
      'PreRegisteredClient',
      'Progress',
      'RemoteAuthConfig',
      'StoredClient',
      'StoredTokens',
      'crossAppAccess',
      'defaultAuthDir',
      'fileAuthStore',
      'loopbackAuthorizer',
      'memoryAuthStore',
      'parseChallenges',
      'Channel',
      'ConfigError',
      'ConnectOptions',
      'Connection',
      'ConnectionError',
      'ConnectionErrorCode',
      'DEFAULT_INHERITED_ENV',
      'EraCache',
      'defaultEraCache',
      'Direction',
      'ExitStatus',
      'FrameTrace',
      'HttpChannel',
      'HttpChannelOptions',
      'LATEST_LEGACY_PROTOCOL_VERSION',
      'LATEST_PROTOCOL_VERSION',
      'LEGACY_PROTOCOL_VERSIONS',
      'LoadConfigOptions',
      'MODERN_PROTOCOL_VERSIONS',
      'McpConfig',
      'ProtocolEra',
      'ReconnectOptions',
      'RemoteServerConfig',
      'RequestOptions',
      'RpcError',
      'SUPPORTED_PROTOCOL_VERSIONS',
      'ServerConfig',
      'SocketServerConfig',
      'SseChannel',
      'StdioChannel',
      'StdioOptions',
      'StdioServerConfig',
      'StreamChannel',
      'StreamChannelOptions',
      'ToolPolicy',
      'checkConfig',
      'connect',
      'connectOver',
      'findConfig',
      'isStdioServer',
      'loadConfig',
      'parseConfig',
    ],
  },
  'mcp-frame/cassette': {
    file: 'cassette/index.ts',
    names: [
      'CapturePosition',
      'Cassette',
      'CassetteError',
      'CassetteEvent',
      'CassetteWriter',
      'CheckProblem',
      'CheckReport',
      'EventRecorder',
      'REPLAY_NOT_RECORDED',
      'RecordingTap',
      'ReplayOptions',
      'Replayer',
      'Side',
      'checkCassette',
      'checkStream',
      'formatReport',
      'parseCassette',
      'replayStream',
    ],
  },
  'mcp-frame/sdk': {
    file: 'sdk/index.ts',
    names: ['StdioTransport'],
  },
  'mcp-frame/serve': {
    file: 'serve/index.ts',
    names: [
      'BridgeOptions',
      'BridgeResult',
      'CALLER_META',
      'Caller',
      'Decision',
      'Gateway',
      'GatewayObserver',
      'GatewayOptions',
      'LogFields',
      'LogLevel',
      'Logger',
      'LoggerOptions',
      'MetricsRegistry',
      'Policy',
      'PolicyError',
      'PolicyRule',
      'PrefixMode',
      'ServeAuthOptions',
      'ServeConfig',
      'ServeHandle',
      'ServeOptions',
      'ServePaths',
      'ServeTarget',
      'ServeTls',
      'ServerChanges',
      'UpstreamHealth',
      'UpstreamOpenOptions',
      'UpstreamOpener',
      'UpstreamState',
      'bridge',
      'createLogger',
      'serve',
    ],
    // Four of the six are types, which have no runtime form.
    runtime: 2,
  },
  'mcp-frame/bridge': {
    file: 'bridge/index.ts',
    names: ['BridgeOptions', 'BridgeResult', 'bridge'],
    runtime: 1,
  },
  'mcp-frame/web': {
    file: 'web/index.ts',
    names: ['FrameDecoderStream', 'FrameDecoderStreamOptions', 'FrameEncoderStream', 'FrameError', 'FrameErrorCode', 'WebFraming', 'frame'],
    runtime: 4,
  },
} as const;

/** TypeScript 5.9 from peers/ (installed by .ci/run), for node10 resolution, which TypeScript 7 no longer has. */
const TSC5 = `${ROOT}peers/node_modules/typescript/bin/tsc`;

/**
 * A TypeScript user's view of the installed package: every entry point's types resolve under `nodenext` (with
 * this package's TypeScript 7) and under `node10`, the default of `module: commonjs` (with TypeScript 5.9,
 * through typesVersions), and a wrong use of them is an error, so the check is not vacuous.
 */
function typechecks(project: string): void {
  const source = [
    "import { frame } from 'mcp-frame';",
    "import { connect, fileAuthStore, type AuthOptions } from 'mcp-frame/client';",
    "import { Cassette } from 'mcp-frame/cassette';",
    "import { StdioTransport } from 'mcp-frame/sdk';",
    "import { serve } from 'mcp-frame/serve';",
    'const text: string = frame({ a: 1 });',
    "const auth: AuthOptions = { store: fileAuthStore(), scope: 'x' };",
    'export const used = [text, auth, connect, Cassette, StdioTransport, serve];',
  ].join('\n');
  const compile = (tsc: string[], options: Record<string, unknown>, file: string, text: string): { status: number | null; out: string } => {
    writeFileSync(join(project, file), text);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, skipLibCheck: true, types: [], ...options }, files: [file] }),
    );
    const run = spawnSync(tsc[0]!, [...tsc.slice(1), '-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8' });
    return { status: run.status, out: run.stdout + run.stderr };
  };
  const compilers: Array<[string, string[], Record<string, unknown>]> = [
    ['TypeScript 7, nodenext', [process.execPath, `${ROOT}node_modules/typescript/bin/tsc`], { module: 'nodenext', moduleResolution: 'nodenext' }],
  ];
  if (existsSync(TSC5)) {
    compilers.push(['TypeScript 5.9, node10', [process.execPath, TSC5], { module: 'commonjs', moduleResolution: 'node10', target: 'es2022' }]);
    // The typings themselves checked (no skipLibCheck), without esModuleInterop: a default import of a Node
    // module in them (`import http from 'node:http'`) would fail there.
    compilers.push([
      'TypeScript 5.9, node10, the typings checked',
      [process.execPath, TSC5],
      {
        module: 'commonjs',
        moduleResolution: 'node10',
        target: 'es2022',
        skipLibCheck: false,
        esModuleInterop: false,
        types: ['node'],
        typeRoots: [`${ROOT}node_modules/@types`],
      },
    ]);
  } else note('skipped: TypeScript 5.9 for the node10 check is not installed (npm ci --prefix peers; .ci/run does it)');
  for (const [label, tsc, options] of compilers) {
    const good = compile(tsc, options, 'use.ts', source);
    expect(good.out, label).to.equal('');
    expect(good.status, label).to.equal(0);
    const bad = compile(tsc, options, 'misuse.ts', `${source}\nconst wrong: number = frame({});\n`);
    expect(bad.out, label).to.match(/misuse\.ts.*Type 'string' is not assignable to type 'number'/);
  }
}

/** Every module a file's static imports reach (a dynamic import() is not followed). */
function reachedFrom(start: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!file.startsWith('/')) return;
    const text = readFileSync(file, 'utf8');
    for (const [, spec] of text.matchAll(/^(?:import|export)\s[^;]*?from\s*'([^']+)'|^import\s*'([^']+)'/gm)) {
      if (spec === undefined) continue;
      visit(spec.startsWith('.') ? join(dirname(file), spec) : spec);
    }
  };
  visit(start);
  return seen;
}

describe('the package', () => {
  for (const [specifier, entry] of Object.entries(ENTRY_POINTS)) {
    const { file, names } = entry;
    const atLeast = 'runtime' in entry ? entry.runtime : Math.min(5, names.length);
    it(`exports exactly the pinned names from ${specifier}`, async () => {
      expect(exportedNames(file)).to.deep.equal([...names].sort());
      // The package's own name resolves through package.json's exports, as it will for a user.
      const module = (await import(specifier)) as Record<string, unknown>;
      const runtime = Object.keys(module).sort();
      expect(runtime.length).to.be.at.least(atLeast);
      for (const name of runtime) expect(names as readonly string[]).to.include(name);
    });
  }

  it('keeps @internal declarations out of the typings', () => {
    const typings = readFileSync(`${ROOT}dist/lib/client/connection.d.ts`, 'utf8');
    expect(readFileSync(`${ROOT}lib/client/connection.ts`, 'utf8')).to.include('@internal');
    expect(typings).to.not.include('@internal');
    expect(typings).to.not.match(/\binitialize\(options/);
  });

  it('declares every JSON-RPC error code once, in lib/protocol/codes.ts: no code literal in the code elsewhere', () => {
    const files = (readdirSync(`${ROOT}lib`, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts') && f !== 'protocol/codes.ts');
    const literals: string[] = [];
    for (const file of files) {
      readFileSync(`${ROOT}lib/${file}`, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const code = line.replace(/\/\/.*$/, '');
          if (/^\s*(\*|\/\*)/.test(code)) return;
          if (/(?<![\w.])-32[0-7]\d\d\b/.test(code)) literals.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(files.length).to.be.greaterThan(20);
    expect(literals).to.deep.equal([]);
  });

  it('has imports that point down the layers only, and no import circle', () => {
    // Lower number, lower layer. A file may import its own layer and the ones below.
    const layerOf = (path: string): number => {
      if (path.startsWith('cli/')) return 7;
      // serve's rooms, lowest first; its own files (serve.ts, options.ts, index.ts) compose them.
      const room = ['observe', 'identity', 'replicas', 'sessions', 'http'].findIndex((r) => path.startsWith(`serve/${r}/`));
      if (room !== -1) return 6 + room / 10;
      if (path.startsWith('serve/')) return 6.9;
      if (path.startsWith('bridge/')) return 5;
      if (path.startsWith('cassette/') || path.startsWith('sdk/') || path.startsWith('gateway/')) return 4;
      if (path.startsWith('client/')) return 3;
      if (path === 'streams.ts' || path === 'index.ts' || path.startsWith('web/')) return 2;
      if (path.startsWith('framings/') || path.startsWith('protocol/')) return 1;
      return 0; // errors, jsonrpc, json-position, version, debug
    };
    const files = (readdirSync(`${ROOT}lib`, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));
    const upward: string[] = [];
    const throughIndex: string[] = [];
    const edges = new Map<string, string[]>();
    for (const file of files) {
      const text = readFileSync(`${ROOT}lib/${file}`, 'utf8');
      const targets: string[] = [];
      for (const [, spec] of text.matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
        const target = relative(`${ROOT}lib`, join(dirname(`${ROOT}lib/${file}`), spec!)).replace(/\.js$/, '.ts');
        targets.push(target);
        if (layerOf(target) > layerOf(file) || (target === 'index.ts' && file !== 'index.ts')) upward.push(`${file} -> ${target}`);
        // Another room of serve's is reached through its index.ts (but for the Redis store, loaded only for --store).
        const room = /^serve\/(\w+)\//.exec(target)?.[1];
        if (room !== undefined && !file.startsWith(`serve/${room}/`) && !target.endsWith('/index.ts') && !target.endsWith('/redis-store.ts'))
          throughIndex.push(`${file} -> ${target}`);
      }
      edges.set(file, targets);
    }
    expect(files.length).to.be.greaterThan(20);
    expect(upward).to.deep.equal([]);
    expect(throughIndex).to.deep.equal([]);
    expect(files.filter((f) => /^serve\/\w+\/index\.ts$/.test(f)).sort()).to.deep.equal(
      ['http', 'identity', 'observe', 'replicas', 'sessions'].map((r) => `serve/${r}/index.ts`),
    );
    // A depth-first walk: a module met again while it is still being walked closes a circle.
    const circles: string[] = [];
    const state = new Map<string, 'walking' | 'done'>();
    const walk = (file: string, path: string[]): void => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'walking') return void circles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
      state.set(file, 'walking');
      for (const target of edges.get(file) ?? []) walk(target, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of files) walk(file, []);
    expect(circles).to.deep.equal([]);
  });

  it("exports nothing that nothing imports: an export is an entry point's, or another module's import", () => {
    const tsFiles = (dir: string): string[] =>
      (readdirSync(`${ROOT}${dir}`, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => `${dir}/${f}`);
    const library = tsFiles('lib');
    const readers = [...library, ...tsFiles('test'), ...tsFiles('bench'), ...tsFiles('examples')];
    const exported: string[] = [];
    for (const file of library) {
      // An entry point's exports are the package's; the bin's are its own.
      if (file.endsWith('/index.ts') || file === 'lib/cli/main.ts') continue;
      const text = readFileSync(`${ROOT}${file}`, 'utf8');
      const declared =
        /^export\s+(?:declare\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type|enum|abstract class)\s+([A-Za-z_$][\w$]*)/gm;
      for (const [, name] of text.matchAll(declared)) exported.push(`${file}:${name}`);
    }
    const imported = new Set<string>();
    for (const file of readers) {
      const text = readFileSync(`${ROOT}${file}`, 'utf8');
      // Static imports and re-exports, and the names a dynamic import destructures (`const { a } = await import('./x.js')`).
      const pattern = /(?:(?:import|export)\s+(?:type\s+)?\{([^}]*)\}\s*from\s*|const\s+\{([^}]*)\}\s*=\s*await\s+import\()'(\.[^']+)'/g;
      for (const [, staticNames, dynamicNames, spec] of text.matchAll(pattern)) {
        const names = staticNames ?? dynamicNames;
        const target = relative(ROOT, join(dirname(`${ROOT}${file}`), spec!)).replace(/\.js$/, '.ts');
        for (const part of names!.split(',')) {
          const name = part
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)[0]!
            .trim();
          if (name !== '') imported.add(`${target}:${name}`);
        }
      }
    }
    expect(exported.length).to.be.greaterThan(100);
    expect(exported.filter((e) => !imported.has(e))).to.deep.equal([]);
  });

  it('loads no sign-in code for mcp-frame/serve: the authorization flow is a dynamic import', () => {
    const modules = [...reachedFrom(`${ROOT}dist/lib/serve/index.js`)];
    expect(modules.some((m) => m.endsWith('/client/stdio.js'))).to.equal(true);
    expect(modules.filter((m) => m.includes('/client/auth/'))).to.deep.equal([]);
    expect(readFileSync(`${ROOT}dist/lib/client/sign-in.js`, 'utf8')).to.include("import('./auth/session.js')");
    // A client that signs in still gets the flow.
    expect([...reachedFrom(`${ROOT}dist/lib/client/auth/session.js`)].some((m) => m.endsWith('/client/auth/dpop.js'))).to.equal(true);
  });

  it('has a unit suite for every module of the floor and the gateway: test/protocol/ and test/gateway/ import each one', () => {
    const missing: string[] = [];
    for (const room of ['protocol', 'gateway']) {
      const suites = (readdirSync(`${ROOT}test/${room}`) as string[]).filter((f) => f.endsWith('.test.ts'));
      const imports = suites.map((f) => readFileSync(`${ROOT}test/${room}/${f}`, 'utf8')).join('\n');
      const modules = (readdirSync(`${ROOT}lib/${room}`) as string[]).filter((f) => f.endsWith('.ts'));
      expect(modules.length).to.be.at.least(4);
      for (const module of modules)
        if (!imports.includes(`from '../../lib/${room}/${module.replace(/\.ts$/, '.js')}'`)) missing.push(`lib/${room}/${module}`);
    }
    expect(missing).to.deep.equal([]);
  });

  it("loads only what the bin needs to start: each command's module is a dynamic import", () => {
    const modules = [...reachedFrom(`${ROOT}dist/lib/cli/main.js`)];
    expect(modules.length).to.be.at.least(3);
    expect(modules.length, modules.join(' ')).to.be.at.most(30);
    expect(modules.filter((m) => /\/(serve|gateway|client)\//.test(m))).to.deep.equal([]);
    expect(readFileSync(`${ROOT}dist/lib/cli/main.js`, 'utf8')).to.include("import('./serve.js')");
  });

  it('keeps mcp-frame/web off Node: no node: module, no Buffer and no process in anything its entry reaches', () => {
    const modules = [...reachedFrom(`${ROOT}dist/lib/web/index.js`)];
    expect(modules.length).to.be.greaterThan(4);
    expect(
      modules.filter((m) => !m.startsWith('/')),
      'bare imports (node: modules, packages)',
    ).to.deep.equal([]);
    for (const module of modules) {
      // The code, its comments left out (they may speak of Buffer).
      const code = readFileSync(module, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/(^|[^:])\/\/.*$/gm, '$1');
      expect(code, module).not.to.match(/\bBuffer\b|\bprocess\b|\brequire\(/);
    }
    // The Node entry's framing is not what it reaches (a check that would pass on any module is no check).
    expect(modules.some((m) => m.endsWith('/framings/ndjson.js'))).to.equal(false);
    const node = [...reachedFrom(`${ROOT}dist/lib/index.js`)];
    expect(node.some((m) => m.startsWith('node:'))).to.equal(true);
  });

  it('loads the Redis client only for serve --store: no static import reaches it from any entry point or the bin', () => {
    const reached = reachedFrom;
    const store = reached(`${ROOT}dist/lib/serve/replicas/redis-store.js`);
    expect(store.has('@redis/client')).to.equal(true);
    for (const entry of ['index.js', 'client/index.js', 'serve/index.js', 'bridge/index.js', 'cli/main.js', 'cli/serve.js']) {
      const modules = [...reached(`${ROOT}dist/lib/${entry}`)];
      expect(modules.length, entry).to.be.greaterThan(3);
      expect(
        modules.filter((m) => m.includes('redis')),
        entry,
      ).to.deep.equal([]);
    }
    expect(readFileSync(`${ROOT}dist/lib/serve/serve.js`, 'utf8')).to.include("import('./replicas/redis-store.js')");
  });

  it('fails the lint on a file that breaks its rules, and passes a clean one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-frame-lint-'));
    try {
      copyFileSync(`${ROOT}biome.jsonc`, join(dir, 'biome.jsonc'));
      mkdirSync(join(dir, 'lib'));
      writeFileSync(join(dir, 'lib/bad.ts'), 'export function f(a: any) {\n  if (a == 1) debugger;\n  return a;\n}\n');
      writeFileSync(join(dir, 'lib/good.ts'), 'export const answer = 42;\n');
      const biome = `${ROOT}node_modules/.bin/biome`;
      const bad = spawnSync(biome, ['ci', 'lib/bad.ts'], { cwd: dir, encoding: 'utf8' });
      expect(bad.status).to.equal(1);
      expect(bad.stdout + bad.stderr)
        .to.include('noDebugger')
        .and.to.include('noDoubleEquals');
      expect(() => execFileSync(biome, ['ci', 'lib/good.ts'], { cwd: dir, stdio: 'pipe' })).to.not.throw();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('packs into a tarball that installs in a fresh project: import, require, the bin, and sources for its maps', function () {
    this.timeout(120_000);
    const dir = mkdtempSync(join(tmpdir(), 'mcp-frame-pack-'));
    try {
      // --ignore-scripts: the tests run from dist/, which npm test has just built; prepack would rebuild it.
      const tarball = execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], {
        cwd: ROOT,
        encoding: 'utf8',
      }).trim();
      const project = join(dir, 'project');
      mkdirSync(project);
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'host', version: '1.0.0', private: true }));
      // Offline, the tarball alone: it has no runtime dependency to fetch (its peers are optional).
      execFileSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--offline', join(dir, tarball.split('\n').at(-1)!)], {
        cwd: project,
        stdio: 'pipe',
      });
      const node = (args: string[]): string => execFileSync(process.execPath, args, { cwd: project, encoding: 'utf8' });
      expect(node(['--input-type=module', '-e', "const m = await import('mcp-frame'); process.stdout.write(m.frame({ a: 1 }))"])).to.equal(
        '{"a":1}\n',
      );
      expect(node(['-e', "const c = require('mcp-frame/client'); process.stdout.write(typeof c.connect)"])).to.equal('function');
      expect(node(['-e', "process.stdout.write(typeof require('mcp-frame/sdk').StdioTransport)"])).to.equal('function');
      expect(execFileSync(join(project, 'node_modules/.bin/mcp-frame'), ['--version'], { encoding: 'utf8' }).trim()).to.equal(
        JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')).version,
      );
      // Stack traces through the source maps name files that exist in the installed package.
      const installed = join(project, 'node_modules/mcp-frame');
      const map = JSON.parse(readFileSync(join(installed, 'dist/lib/errors.js.map'), 'utf8')) as { sources: string[] };
      for (const source of map.sources) expect(existsSync(join(installed, 'dist/lib', source)), source).to.equal(true);
      expect(existsSync(join(installed, 'LICENSE'))).to.equal(true);
      typechecks(project);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
