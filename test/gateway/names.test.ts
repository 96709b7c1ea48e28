import { expect } from 'chai';
import { decodeCursor, encodeCursor, globPattern, NameFilter, prefixClashes, templatePattern } from '../../lib/gateway/names.js';

describe('gateway/names: exposed names, filters, cursors and templates', () => {
  it('reads a glob as a whole-name pattern: * any run, ? one character, everything else literal', () => {
    expect(globPattern('github__*').test('github__create_issue')).to.equal(true);
    expect(globPattern('github__*').test('xgithub__a')).to.equal(false);
    expect(globPattern('a?c').test('abc')).to.equal(true);
    expect(globPattern('a?c').test('ac')).to.equal(false);
    expect(globPattern('a.c').test('abc'), 'a dot is a dot').to.equal(false);
    expect(globPattern('(x)+[y]').test('(x)+[y]')).to.equal(true);
    expect(globPattern('*').test('multi\nline')).to.equal(true);
  });

  it('finds the server names whose prefixed names can be one and the same', () => {
    expect(prefixClashes(['google', 'google_drive', 'github'], '_')).to.deep.equal([['google', 'google_drive']]);
    expect(prefixClashes(['google', 'google_drive'], '__')).to.deep.equal([]);
    expect(prefixClashes(['a', 'a'], '__')).to.deep.equal([['a', 'a']]);
    expect(prefixClashes([], '__')).to.deep.equal([]);
  });

  it('passes a name that any allow glob matches (when there are any) and no deny glob matches', () => {
    const open = new NameFilter();
    expect(open.passes('anything')).to.equal(true);
    const filter = new NameFilter(['fs__*', 'git__status'], ['fs__write*']);
    expect(filter.passes('fs__read')).to.equal(true);
    expect(filter.passes('git__status')).to.equal(true);
    expect(filter.passes('git__push')).to.equal(false);
    expect(filter.passes('fs__write_file')).to.equal(false);
    expect(new NameFilter([], ['*secret*']).passes('get_secret_key')).to.equal(false);
  });

  it("makes opaque cursors that carry an upstream's own cursor back, and refuses any other", () => {
    for (const position of [
      { upstream: 0, cursor: undefined },
      { upstream: 3, cursor: 'their-cursor/é' },
    ]) {
      const cursor = encodeCursor('tools', position);
      expect(cursor).to.match(/^mf1\.[A-Za-z0-9_-]+$/);
      expect(decodeCursor('tools', cursor)).to.deep.equal(position);
      expect(decodeCursor('prompts', cursor), "another list's cursor").to.equal(undefined);
    }
    const forged = (value: unknown): string => `mf1.${Buffer.from(JSON.stringify(value)).toString('base64url')}`;
    for (const bad of [
      '',
      'abc',
      'mf1.!!!',
      forged(['tools', -1, null]),
      forged(['tools', 1.5, null]),
      forged(['tools', 1, 7]),
      forged(['tools', 1]),
    ])
      expect(decodeCursor('tools', bad), bad).to.equal(undefined);
  });

  it('matches a URI against an RFC 6570 template closely enough to route a read', () => {
    expect(templatePattern('file:///{path}').test('file:///a.txt')).to.equal(true);
    expect(templatePattern('file:///{path}').test('file:///dir/a.txt'), 'a simple variable holds no /').to.equal(false);
    expect(templatePattern('file:///{+path}').test('file:///dir/a.txt')).to.equal(true);
    expect(templatePattern('users/{id}{?fields}').test('users/7?fields=name')).to.equal(true);
    expect(templatePattern('users/{id}{?fields}').test('users/7')).to.equal(true);
    expect(templatePattern('db://{table}/rows{/id}').test('db://t/rows/1/2')).to.equal(true);
    expect(templatePattern('a.b/{x}').test('aXb/1'), 'literal parts are literal').to.equal(false);
    expect(templatePattern('unclosed/{x').test('unclosed/{x')).to.equal(true);
  });
});
