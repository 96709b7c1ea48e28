// The README and the reference pages in docs/: every relative link reaches a file (and a heading, for an
// anchor) that the repository has and the package ships, and every name they import from mcp-frame is exported.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { expect } from 'chai';
import { exportedNames } from './helpers/exports.js';
import { ROOT } from './helpers/fixtures.js';

const PAGES = ['README.md', ...readdirSync(`${ROOT}docs`).map((f) => `docs/${f}`)];
const ENTRIES: Record<string, string> = {
  'mcp-frame': 'index.ts',
  'mcp-frame/client': 'client/index.ts',
  'mcp-frame/cassette': 'cassette/index.ts',
  'mcp-frame/sdk': 'sdk/index.ts',
  'mcp-frame/serve': 'serve/index.ts',
  'mcp-frame/bridge': 'bridge/index.ts',
  'mcp-frame/web': 'web/index.ts',
};

/** GitHub's anchor for a heading. */
function anchor(heading: string): string {
  return heading
    .replace(/^#+\s*/, '')
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
}

/** The text outside fenced code blocks (links in code are not links). */
function prose(text: string): string {
  return text.replace(/```[\s\S]*?```/g, '');
}

describe('the README and docs/', () => {
  const shipped = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { files: string[] }).files;

  it('has the reference pages the README names', () => {
    expect(PAGES).to.include.members([
      'docs/framing.md',
      'docs/client.md',
      'docs/serve-and-bridge.md',
      'docs/cli.md',
      'docs/cassettes.md',
      'docs/security.md',
      'docs/performance.md',
    ]);
  });

  for (const page of PAGES) {
    it(`${page}: every relative link resolves to a shipped file, and every anchor to a heading`, () => {
      const text = readFileSync(`${ROOT}${page}`, 'utf8');
      const links = [...prose(text).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
      expect(links.length, 'links checked').to.be.greaterThan(0);
      const broken: string[] = [];
      for (const link of links) {
        const [path, hash] = link.split('#') as [string, string | undefined];
        const target = path === '' ? page : normalize(join(dirname(page), path));
        if (!existsSync(`${ROOT}${target}`)) {
          broken.push(`${link}: no file ${target}`);
          continue;
        }
        if (!shipped.some((f) => target === f || target.startsWith(`${f}/`))) broken.push(`${link}: ${target} is not in package.json's files`);
        if (hash !== undefined) {
          const headings = [...readFileSync(`${ROOT}${target}`, 'utf8').matchAll(/^#{1,6} .*$/gm)].map((m) => anchor(m[0]));
          if (!headings.includes(hash)) broken.push(`${link}: no heading #${hash} in ${relative('.', target)}`);
        }
      }
      expect(broken).to.deep.equal([]);
    });
  }

  it('names no file of the repository that the package does not ship (a reader of the package has only those)', () => {
    const named: string[] = [];
    for (const page of PAGES) {
      const text = readFileSync(`${ROOT}${page}`, 'utf8');
      // Paths of the repository's own folders that a reader would look for (bench/, lib/, docs/).
      for (const m of prose(text).matchAll(/(?<![\w./-])((?:bench|docs)\/[\w.-]+\.(?:md|svg|json))\b/g)) {
        const path = m[1]!;
        const shippedHere = shipped.some((entry) => path === entry || path.startsWith(`${entry}/`));
        if (!shippedHere) named.push(`${page}: ${path}`);
      }
    }
    expect(named).to.deep.equal([]);
  });

  it("names every event of serve's log and every channel it publishes on, and no other", () => {
    const sources = (readdirSync(`${ROOT}lib`, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));
    const events = new Set<string>();
    for (const file of sources) {
      const text = readFileSync(`${ROOT}lib/${file}`, 'utf8');
      // A log call's event is its first argument: `log.warn('upstream.down', ...)`, on one line or the next.
      for (const m of text.matchAll(/\.(?:debug|info|warn|error)\(\s*'([a-z]+\.[a-z_]+)'/g)) events.add(m[1]!);
    }
    expect(events.size).to.be.greaterThan(30);
    const page = readFileSync(`${ROOT}docs/serve-and-bridge.md`, 'utf8');
    const logs = page.slice(page.indexOf('**Logs.** Text lines'), page.indexOf('**Events.**'));
    const documented = new Set([...logs.matchAll(/`([a-z]+\.[a-z_]+)`/g)].map((m) => m[1]!));
    expect([...events].filter((e) => !documented.has(e)).sort(), 'logged, not documented').to.deep.equal([]);
    expect([...documented].filter((e) => !events.has(e)).sort(), 'documented, not logged').to.deep.equal([]);
    const channels = readFileSync(`${ROOT}lib/serve/observe/events.ts`, 'utf8');
    const published = [...channels.slice(channels.indexOf('export interface ServeEvents')).matchAll(/^ {2}'([a-z]+:[a-z]+)':/gm)].map((m) => m[1]!);
    expect(published.length).to.be.greaterThan(8);
    const said = page.slice(page.indexOf('**Events.**'), page.indexOf('**What it costs.**'));
    for (const channel of published) expect(said, channel).to.match(new RegExp(`\`(?:mcp-frame:serve)?:${channel}\``));
  });

  it('imports, in its examples, only names that the package exports', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const page of PAGES) {
      const text = readFileSync(`${ROOT}${page}`, 'utf8');
      for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'(mcp-frame[^']*)'/g)) {
        const entry = ENTRIES[m[2]!];
        if (entry === undefined) {
          missing.push(`${page}: no entry point ${m[2]}`);
          continue;
        }
        const names = exportedNames(entry);
        for (const item of m[1]!.split(',')) {
          const name = item
            .trim()
            .replace(/^type /, '')
            .split(/\s+as\s+/)[0]!;
          if (name === '') continue;
          checked++;
          if (!names.includes(name)) missing.push(`${page}: ${name} from ${m[2]}`);
        }
      }
      // Names written as calls in the prose, such as `printable()`, are exported somewhere too.
      for (const m of prose(text).matchAll(/`([a-z][A-Za-z]+)\(\)`/g)) {
        const name = m[1]!;
        const known = Object.values(ENTRIES).some((e) => exportedNames(e).includes(name));
        if (!known && !METHODS.has(name)) missing.push(`${page}: \`${name}()\` is named but not exported`);
      }
    }
    expect(checked).to.be.greaterThan(10);
    expect(missing).to.deep.equal([]);
  });
});

/** Methods and functions the docs name that are not the package's exports: Node's, and methods of exported classes. */
const METHODS = new Set(['require', 'close', 'request', 'write', 'end', 'authorize', 'open', 'start', 'send', 'notify', 'lock', 'destroy']);
