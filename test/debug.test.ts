// NODE_DEBUG=mcp-frame: diagnostics on stderr for operators, redacted; nothing at all when it is unset.
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import { ROOT } from './helpers/fixtures.js';

/** Decodes two good lines around a bad one carrying a secret, in skip mode, in a fresh process. */
function decodeInChild(env: NodeJS.ProcessEnv): { stdout: string; stderr: string } {
  const script = `
    import { FrameDecoder } from '${ROOT}dist/lib/index.js';
    const decoder = new FrameDecoder({ onInvalid: 'skip' });
    decoder.on('invalid', () => {});
    const got = [];
    decoder.on('data', (m) => got.push(m));
    decoder.on('end', () => console.log(JSON.stringify(got)));
    decoder.end('{"a":1}\\n{"api_key":"sk-abcdefghijklmnop", oops\\n{"b":2}\\n');`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8' });
  return { stdout: run.stdout, stderr: run.stderr };
}

describe('NODE_DEBUG=mcp-frame', () => {
  it('prints each bad frame with its code, position and a redacted preview', () => {
    const { stdout, stderr } = decodeInChild({ ...process.env, NODE_DEBUG: 'mcp-frame' });
    expect(JSON.parse(stdout)).to.deep.equal([{ a: 1 }, { b: 2 }]);
    expect(stderr).to.match(/MCP-FRAME \d+: FrameDecoder: INVALID_JSON: .*line 2/);
    expect(stderr).to.include('[REDACTED]');
    expect(stderr).not.to.include('sk-abcdefghijklmnop');
  });

  it('prints nothing when unset', () => {
    const env = { ...process.env };
    delete env.NODE_DEBUG;
    const { stdout, stderr } = decodeInChild(env);
    expect(JSON.parse(stdout)).to.deep.equal([{ a: 1 }, { b: 2 }]);
    expect(stderr).to.equal('');
  });
});
