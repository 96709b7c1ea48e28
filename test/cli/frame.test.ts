import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtureMessages, frameFixture } from '../../lib/cli/frame.js';
import { CliError } from '../../lib/cli/io.js';
import { frameCases, ROOT } from '../helpers/fixtures.js';
import { cli, run } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

describe('mcp-frame frame (a fixture in, its frames out)', () => {
  for (const c of frameCases()) {
    it(`prints the expected frames and parsed messages for fixtures/frame/${c.name}`, async () => {
      const result = await cli(['frame', c.inputPath]);
      expect(result.stderr).to.equal('');
      expect(result.code).to.equal(0);
      expect(result.stdout.endsWith('\n')).to.equal(true);
      expect(JSON.parse(result.stdout)).to.deep.equal(c.expected);
    });
  }

  it('reads the fixture from stdin when no path (or -) is given', async () => {
    const c = frameCases().find((x) => x.name === 'unicode')!;
    for (const args of [['frame'], ['frame', '-']]) {
      const result = await cli(args, { stdin: JSON.stringify(c.input) });
      expect(result.code).to.equal(0);
      expect(JSON.parse(result.stdout)).to.deep.equal(c.expected);
    }
  });

  it('takes a case folder for its input.json, directly and through your_program.sh', async () => {
    const c = frameCases().find((x) => x.name === 'mcp-session')!;
    const folder = join(c.inputPath, '..');
    for (const result of [await cli(['frame', folder]), await run(`${ROOT}your_program.sh`, ['mcp-frame', folder])]) {
      expect(result.code, result.stderr).to.equal(0);
      expect(JSON.parse(result.stdout)).to.deep.equal(c.expected);
    }
    const empty = tempDir('case');
    const missing = await cli(['frame', empty]);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.match(/input\.json: no such file/);
  });

  it('runs the same through your_program.sh mcp-frame <fixture>', async () => {
    const c = frameCases().find((x) => x.name === 'mcp-session')!;
    const result = await run(`${ROOT}your_program.sh`, ['mcp-frame', c.inputPath]);
    expect(result.code).to.equal(0);
    expect(JSON.parse(result.stdout)).to.deep.equal(c.expected);
  });

  describe('a bad fixture exits non-zero with one line naming it', () => {
    const dir = tempDir('cli');
    const file = (name: string, content: string): string => {
      const path = join(dir, name);
      writeFileSync(path, content);
      return path;
    };
    const cases: Array<[string, () => string, RegExp]> = [
      ['a missing file', () => join(dir, 'absent.json'), /cannot read fixture .*absent\.json: no such file/],
      ['a file that is not JSON', () => file('broken.json', '[{"jsonrpc": "2.0",\n  "id": }]'), /broken\.json is not JSON \(line 2, column \d+\)/],
      ['JSON that is not a list of messages', () => file('scalar.json', '42'), /scalar\.json is not a fixture/],
      ['an object without a messages array', () => file('object.json', '{"msgs": []}'), /object\.json is not a fixture/],
      ['a list holding a non-message', () => file('mixed.json', '[{"a":1}, "text"]'), /mixed\.json: messages\[1\] is a string/],
    ];
    for (const [label, make, pattern] of cases) {
      it(label, async () => {
        const path = make();
        const result = await cli(['frame', path]);
        expect(result.code).to.equal(1);
        expect(result.stdout).to.equal('');
        expect(result.stderr.trimEnd().split('\n')).to.have.length(1);
        expect(result.stderr).to.match(pattern);
        expect(result.stderr).to.include(path.slice(dir.length + 1));
      });
    }
  });

  it('rejects unknown commands and extra arguments with a usage exit code', async () => {
    expect((await cli(['nope'])).code).to.equal(2);
    expect((await cli(['frame', 'a.json', 'b.json'])).code).to.equal(2);
    expect((await cli([])).code).to.equal(2);
    const help = await cli(['help']);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.include('frame');
    // The everyday commands first, in this order; the framing tools after.
    const commands = [...help.stdout.matchAll(/^ {2}([a-z-]+)/gm)].map((m) => m[1]);
    expect(commands.slice(0, 5)).to.deep.equal(['call', 'tools', 'bridge', 'serve', 'auth']);
    expect(commands.indexOf('frame')).to.be.greaterThan(commands.indexOf('convert'));
  });

  it('names the command a mistyped one was near, and only a near one', async () => {
    const typo = await cli(['srve', '--port', '0']);
    expect(typo.code).to.equal(2);
    expect(typo.stderr).to.match(/^mcp-frame: unknown command "srve" \(did you mean 'serve'\?\)\n/);
    expect((await cli(['tool', 'x'])).stderr).to.include("(did you mean 'tools'?)");
    expect((await cli(['help', 'cal'])).stderr).to.include("(did you mean 'call'?)");
    const far = await cli(['launch']);
    expect(far.code).to.equal(2);
    expect(far.stderr).to.match(/^mcp-frame: unknown command "launch"\n/);
    // Names on Object's prototype are not commands.
    expect((await cli(['constructor'])).code).to.equal(2);
  });

  it("loads a command's module only when it runs: help of one command is that command's usage", async () => {
    const serve = await cli(['help', 'serve']);
    expect(serve.code).to.equal(0);
    expect(serve.stdout).to.match(/^usage: mcp-frame serve /);
    const tools = await cli(['tools', '--help']);
    expect(tools.stdout).to.match(/^usage: mcp-frame call /);
  });

  it('frameFixture and fixtureMessages agree with the fixtures in-process', () => {
    for (const c of frameCases()) expect(frameFixture(fixtureMessages(c.input, c.name))).to.deep.equal(c.expected);
    expect(() => fixtureMessages({ messages: 'no' }, 'x')).to.throw(CliError);
    expect(() => fixtureMessages([null], 'x')).to.throw(CliError, /messages\[0\] is null/);
  });
});
