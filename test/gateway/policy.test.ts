import { expect } from 'chai';
import { Policy, PolicyError } from '../../lib/gateway/policy.js';
import type { Caller } from '../../lib/protocol/caller.js';

const caller = (scopes: string[], claims: Record<string, unknown>): Caller => ({ subject: `iss|${String(claims.sub)}`, scopes, claims });

describe('gateway/policy: who may call which tool', () => {
  const policy = Policy.parse(
    JSON.stringify({
      description: 'the team',
      rules: [
        { tools: ['fs__read*'], claims: { groups: ['dev', 'ops'] } },
        { tools: ['fs__*'], except: ['fs__delete'], scopes: ['fs:write'], claims: { groups: 'ops' } },
        { tools: ['admin__*'], scopes: ['admin', 'mfa'] },
        { tools: ['admin__*'], scopes: ['admin'], claims: { role: 'root' } },
        { prompts: ['*'] },
      ],
    }),
  );
  const dev = caller([], { sub: 'd', groups: ['dev'] });
  const ops = caller(['fs:write'], { sub: 'o', groups: ['ops'] });
  const opsNoScope = caller([], { sub: 'p', groups: 'ops' });

  it('allows a name when one rule naming it is met: its claims held, its scopes all had', () => {
    expect(policy.allows(dev, 'tools', 'fs__read_file')).to.equal(true);
    expect(policy.allows(dev, 'tools', 'fs__write_file')).to.equal(false);
    expect(policy.allows(ops, 'tools', 'fs__write_file')).to.equal(true);
    expect(policy.allows(ops, 'tools', 'fs__delete'), 'except').to.equal(false);
    expect(policy.allows(undefined, 'tools', 'fs__read_file'), 'nobody signed in').to.equal(false);
    expect(policy.allows(undefined, 'prompts', 'anything')).to.equal(true);
    expect(policy.allows(dev, 'prompts', 'fs__read_file'), 'tools rules say nothing of prompts').to.equal(true);
    expect(policy.allows(caller([], { sub: 'n', groups: 7 }), 'tools', 'fs__read_file')).to.equal(false);
  });

  it('names the scopes to step up to when only scopes are missing: the rule that asks fewest more', () => {
    expect(policy.decide(opsNoScope, 'tools', 'fs__write_file')).to.deep.equal({ allowed: false, scopes: ['fs:write'] });
    expect(policy.decide(dev, 'tools', 'fs__write_file'), 'claims not met: no step up').to.deep.equal({ allowed: false });
    const root = caller(['mfa'], { sub: 'r', role: 'root' });
    expect(policy.decide(root, 'tools', 'admin__reset')).to.deep.equal({ allowed: false, scopes: ['admin'] });
    expect(policy.decide(caller(['admin'], { sub: 'r', role: 'root' }), 'tools', 'admin__reset')).to.deep.equal({ allowed: true });
    expect(policy.scopes).to.deep.equal(['fs:write', 'admin', 'mfa']);
  });

  it('refuses a policy that is not one, naming the line or the rule and key', () => {
    const refused = (text: string): string => {
      try {
        Policy.parse(text, 'team.json');
      } catch (err) {
        expect(err).to.be.instanceOf(PolicyError);
        return (err as Error).message;
      }
      return expect.fail(`parsed: ${text}`);
    };
    expect(refused('{\n  "rules": [\n    {"tools": ["a"],}\n  ]\n}')).to.match(/^team\.json: not valid JSON at line 3, column \d+$/);
    expect(refused('[]')).to.equal('team.json: the policy must be an object with a "rules" array');
    expect(refused('{"rules": [], "extra": 1}')).to.equal('team.json: unknown key "extra" (rules, description)');
    expect(refused('{"rules": [\n  {"tools": ["a"]},\n  {"tool": ["b"]}\n]}')).to.match(/^team\.json line 3: rules\[1\]: unknown key "tool"/);
    expect(refused('{"rules": [{"scopes": ["a"]}]}')).to.match(/rules\[0\] names no tools and no prompts$/);
    expect(refused('{"rules": [{"tools": [""]}]}')).to.match(/rules\[0\]\.tools must be an array of non-empty strings$/);
    expect(refused('{"rules": [{"tools": ["a"], "claims": {"groups": []}}]}')).to.match(/rules\[0\]\.claims\.groups names no value$/);
  });
});
