import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { USAGE } from '../../lib/cli/serve.js';
import { GROUPS } from '../../lib/cli/serve-config.js';
import { connect } from '../../lib/client/connect.js';
import { checkOptions, type ServeConfig } from '../../lib/serve/options.js';
import { serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { serveProcess } from '../helpers/served.js';
import { cli } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

const DEMO = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };

describe('serve(): options grouped as the configuration file groups them', function () {
  this.timeout(30_000);
  const GROUPS_OF_SERVE = ['listen', 'access', 'limits', 'gateway', 'identity', 'replicas', 'observe'];

  it('takes every option of ServeOptions in exactly one group (gateway as gateway.all), as the file has the flags', () => {
    const source = readFileSync(`${ROOT}lib/serve/options.ts`, 'utf8');
    const body = source.slice(
      source.indexOf('export interface ServeOptions {'),
      source.indexOf('\n}\n', source.indexOf('export interface ServeOptions {')),
    );
    const keys = [...body.matchAll(/^ {2}([a-zA-Z]+)\??:/gm)].map((m) => m[1]!);
    expect(keys.length).to.be.greaterThan(40);
    for (const key of keys) {
      const takers = GROUPS_OF_SERVE.filter((group) => {
        const inner = key === 'gateway' ? 'all' : key;
        try {
          checkOptions({ [group]: { [inner]: undefined } } as ServeConfig);
          return true;
        } catch {
          return false;
        }
      });
      expect(takers, key).to.have.length(1);
    }
    // The file's groups and serve()'s are the same ones.
    expect(Object.keys(GROUPS)).to.deep.equal(GROUPS_OF_SERVE);
  });

  it('refuses a key its group does not hold, flat and grouped options mixed, a group that is no object: each a TypeError naming its path', () => {
    expect(() => checkOptions({ limits: { maxSesions: 3 } } as unknown as ServeConfig)).to.throw(
      TypeError,
      /serve: limits\.maxSesions: not an option of limits \(maxSessions,/,
    );
    expect(() => checkOptions({ listen: { port: 0 }, maxSessions: 3 } as unknown as ServeConfig)).to.throw(
      TypeError,
      /flat or grouped, not both: maxSessions/,
    );
    expect(() => checkOptions({ observe: 'json' } as unknown as ServeConfig)).to.throw(TypeError, /serve: observe must be an object/);
    expect(() => checkOptions({ listen: { port: 0 }, gateway: { gateway: true } } as unknown as ServeConfig)).to.throw(
      TypeError,
      /gateway\.gateway: not an option/,
    );
    // A flat gateway: true is ServeOptions' own.
    expect(checkOptions({ gateway: true, maxSessions: 3 })).to.deep.equal({ gateway: true, maxSessions: 3 });
  });

  it('serves with grouped options: gateway.all names one server with its prefix, limits.maxSessions holds', async () => {
    const bridge = await serve(
      { demo: DEMO },
      { listen: { port: 0 }, limits: { maxSessions: 1 }, gateway: { all: true }, observe: { log: () => undefined } },
    );
    try {
      const c = await connect({ type: 'http', url: bridge.url! }, { protocolVersion: '2025-11-25' });
      try {
        const tools = (await c.request('tools/list', {})) as { tools: Array<{ name: string }> };
        expect(tools.tools.map((t) => t.name)).to.include('demo__echo');
        const second = await connect({ type: 'http', url: bridge.url! }, { protocolVersion: '2025-11-25' }).catch((err: Error) => err);
        expect(second).to.be.instanceOf(Error);
        expect((second as Error).message).to.match(/503|sessions/);
      } finally {
        await c.close();
      }
    } finally {
      await bridge.close();
    }
  });
});

describe('mcp-frame serve --config: a serve configuration file', function () {
  this.timeout(30_000);

  it('has a key for every flag of serve, each in one group', () => {
    const flags = new Set([...USAGE.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]!));
    for (const own of ['config', 'print-config', 'help']) flags.delete(own);
    const grouped = Object.values(GROUPS).flat();
    expect(new Set(grouped).size, 'no flag in two groups').to.equal(grouped.length);
    expect(
      [...flags].filter((f) => !grouped.includes(f)),
      'flags with no key',
    ).to.deep.equal([]);
    expect(
      grouped.filter((f) => !flags.has(f)),
      'keys with no flag',
    ).to.deep.equal([]);
  });

  it('prints the configuration in force: the file’s, the flags given over it, paths from the file’s folder, no store password', async () => {
    const dir = tempDir('serve-config-');
    const file = join(dir, 'serve.jsonc');
    writeFileSync(
      file,
      `{
        // the gateway of this team
        "listen": { "port": 0, "host": "127.0.0.1" },
        "limits": { "maxSessions": 2, "drainMs": 100 },
        "gateway": { "all": true, "allowTools": "demo__*", "prefix": "always" },
        "identity": { "policy": "policy.json" },
        "replicas": { "store": "redis://:hunter2@127.0.0.1:6379" },
        "observe": { "logFormat": "json" },
        "mcpServers": { "demo": ${JSON.stringify(DEMO)} },
      }`,
    );
    const printed = await cli(['serve', '--config', file, '--print-config', '--max-sessions', '5']);
    expect(printed.code, printed.stderr).to.equal(0);
    const config = JSON.parse(printed.stdout) as Record<string, Record<string, unknown>>;
    expect(config.limits).to.deep.equal({ maxSessions: '5', drainMs: '100' });
    expect(config.gateway).to.deep.equal({ all: true, allowTools: ['demo__*'], prefix: 'always' });
    expect(config.identity).to.deep.equal({ policy: join(dir, 'policy.json') });
    expect(config.replicas).to.deep.equal({ store: 'redis://127.0.0.1:6379' });
    expect(config.servers).to.equal(file);
    expect(printed.stdout).not.to.include('hunter2');
  });

  it('refuses an unknown key or a value of the wrong type, naming its path (exit 2)', async () => {
    const dir = tempDir('serve-config-');
    for (const [body, said] of [
      [{ limits: { maxSesions: 3 } }, 'limits.maxSesions: unknown key (maxSessions,'],
      [{ observe: { metrics: 'yes' } }, 'observe.metrics: must be true or false, got "yes"'],
      [{ gateway: { allowTools: ['a__*', { x: 1 }] } }, 'gateway.allowTools[1]: must be a string or a number'],
      [{ listen: { port: 0 }, lsten: {} }, 'lsten: unknown key (listen, access,'],
      [{ listen: [] }, 'listen: must be an object'],
    ] as const) {
      const file = join(dir, 'bad.json');
      writeFileSync(file, JSON.stringify({ ...body, mcpServers: { demo: DEMO } }));
      const run = await cli(['serve', '--config', file, '--all']);
      expect(run.code, run.stderr).to.equal(2);
      expect(run.stderr).to.include(`${file}: ${said}`);
    }
  });

  it('serves with what the file says, its servers in a servers file it names, which is read from its folder', async () => {
    const dir = tempDir('serve-config-');
    writeFileSync(join(dir, 'servers.json'), JSON.stringify({ mcpServers: { demo: DEMO } }));
    const file = join(dir, 'serve.json');
    writeFileSync(file, JSON.stringify({ gateway: { all: true }, observe: { logFormat: 'json' }, servers: 'servers.json' }));
    const { proc, stderr, exited, url } = await serveProcess(['--config', file]);
    try {
      const lines = stderr()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { event: string });
      expect(lines.map((l) => l.event)).to.include('serve.listening');
      const c = await connect({ type: 'http', url: url! }, { protocolVersion: '2025-11-25' });
      try {
        expect(await c.request('tools/call', { name: 'demo__echo', arguments: { text: 'from the file' } })).to.deep.equal({
          content: [{ type: 'text', text: 'from the file' }],
        });
      } finally {
        await c.close();
      }
    } finally {
      proc.kill('SIGTERM');
      await exited;
    }
  });
});
