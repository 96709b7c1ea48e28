// Tool search and DPoP, in process: what serve's own work costs. search_tools over 1,000 and 10,000 generated
// tools (the index made once per list change: its time and the memory it keeps; a search's median time and CPU)
// against the floor a plain implementation sets (every tool scored by counting the query's words in its name and
// description, no index); and a DPoP proof checked (jose's verify, the thumbprint, the replay cache) against the
// access token's own check, which every signed-in call pays already.
// npm run bench runs it; `node --expose-gc dist/bench/search.js` runs it alone.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { DpopKey } from '../lib/client/auth/dpop.js';
import { TokenExchange } from '../lib/gateway/exchange.js';
import { ToolIndex, words } from '../lib/gateway/search.js';
import { DpopCheck } from '../lib/serve/identity/dpop.js';
import { gc } from './gc.js';
import { describe, OBJECTS, VERBS } from '../test/helpers/servers/tracker-words.js';

const QUERIES = [
  'delete a branch',
  'find open issues',
  'merge the pull request',
  'rename a file in the repository',
  'export invoices of a customer',
  'post a message to the channel',
  'review a deployment',
  'sync the team',
];

/** `n` tools named `<server>__<verb>_<object>` (servers s0, s1... as the product runs out), each with a sentence. */
function tools(n: number): Array<{ name: string; description: string; inputSchema: unknown }> {
  const out = [];
  for (let i = 0; out.length < n; i++) {
    const verb = VERBS[i % VERBS.length]!;
    const object = OBJECTS[Math.floor(i / VERBS.length) % OBJECTS.length]!;
    const server = `s${Math.floor(i / (VERBS.length * OBJECTS.length))}`;
    out.push({
      name: `${server}__${verb}_${object}`,
      description: `${describe(verb, object)} Returns the ${object.replace('_', ' ')} as it is after, in ${server}.`,
      inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
    });
  }
  return out;
}

/** The floor: no index; every tool scored by how many of the query's words its name and description hold. */
function scan(all: ReturnType<typeof tools>, query: string, limit: number): string[] {
  const asked = words(query);
  return all
    .map((t) => {
      const have = new Set([...words(t.name), ...words(t.description)]);
      return [t.name, asked.filter((w) => have.has(w)).length] as const;
    })
    .filter(([, score]) => score > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, limit)
    .map(([name]) => name);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface SearchRow {
  tools: number;
  buildMs: number;
  indexMiB: number;
  searchMs: number;
  searchCpuMs: number;
  scanMs: number;
}

export function searchCost(): SearchRow[] {
  const rows: SearchRow[] = [];
  for (const n of [1000, 10_000]) {
    const list = tools(n);
    gc?.();
    const before = process.memoryUsage().heapUsed;
    const started = performance.now();
    const index = new ToolIndex(list);
    const buildMs = performance.now() - started;
    gc?.();
    const indexMiB = (process.memoryUsage().heapUsed - before) / 2 ** 20;
    const times: number[] = [];
    const cpu: number[] = [];
    const scans: number[] = [];
    for (let round = 0; round < 25; round++) {
      for (const q of QUERIES) {
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        index.search(q, 10, () => true);
        const c = process.cpuUsage(c0);
        times.push(performance.now() - t0);
        cpu.push((c.user + c.system) / 1000);
        if (round < 5) {
          const s0 = performance.now();
          scan(list, q, 10);
          scans.push(performance.now() - s0);
        }
      }
    }
    rows.push({ tools: n, buildMs, indexMiB, searchMs: median(times), searchCpuMs: median(cpu), scanMs: median(scans) });
    if (index.size !== n) throw new Error('the index lost tools');
  }
  return rows;
}

export function searchTable(rows: SearchRow[]): string {
  return [
    '| tools | index made (ms) | index kept (MiB) | search median (ms) | search CPU (ms) | floor: a scan (ms) | vs floor |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.tools.toLocaleString('en')} | ${r.buildMs.toFixed(1)} | ${r.indexMiB.toFixed(1)} | ${r.searchMs.toFixed(3)} | ${r.searchCpuMs.toFixed(3)} | ${r.scanMs.toFixed(2)} | ${(r.searchMs / r.scanMs).toFixed(3)}x |`,
    ),
  ].join('\n');
}

export interface DpopRow {
  tokenUs: number;
  proofUs: number;
  /** A token exchange (gateway/exchange.ts) kept from before, and one asked of an authorization server on loopback. */
  keptUs: number;
  askedUs: number;
}

/**
 * What a token exchange adds to a call: the token kept from the caller's first call (a lookup by a hash of the
 * caller's token), and one asked of a minimal authorization server on 127.0.0.1 (its answer at once: the
 * round trip and the gateway's work, not a real server's signing), medians of 500 each.
 */
async function exchangeCost(): Promise<{ keptUs: number; askedUs: number }> {
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith('/.well-known/')) return void res.end(JSON.stringify({ issuer, token_endpoint: `${issuer}/token` }));
    req.resume();
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token":"exchanged","token_type":"Bearer","expires_in":300}'),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const exchange = new TokenExchange({ issuer, clientId: 'gateway', clientSecret: 'secret' });
  const target = { resource: 'https://tools.example/mcp' };
  const kept: number[] = [];
  const asked: number[] = [];
  await exchange.tokenFor('warm-up', target);
  for (let i = 0; i < 500; i++) {
    const t0 = performance.now();
    await exchange.tokenFor(`caller-${i}`, target);
    const t1 = performance.now();
    await exchange.tokenFor(`caller-${i}`, target);
    const t2 = performance.now();
    asked.push((t1 - t0) * 1000);
    kept.push((t2 - t1) * 1000);
  }
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return { keptUs: median(kept), askedUs: median(asked) };
}

/** A proof's check, median of 500, against the access token's own check (jose's jwtVerify with the issuer's key). */
export async function dpopCost(): Promise<DpopRow> {
  const jose = await import('jose');
  const check = new DpopCheck(() => Promise.resolve(jose));
  const key = DpopKey.generate();
  const url = 'https://mcp.example.com/mcp';
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const token = await new SignJWT({ sub: 'ada', cnf: { jkt: key.thumbprint } })
    .setProtectedHeader({ alg: 'ES256', kid: (await exportJWK(publicKey)).kid ?? 'k' })
    .setIssuer('https://idp.example')
    .setAudience(url)
    .setExpirationTime('5m')
    .sign(privateKey);
  const tokenTimes: number[] = [];
  const proofTimes: number[] = [];
  for (let i = 0; i < 500; i++) {
    const proof = key.proof('POST', url, token);
    const t0 = performance.now();
    await jose.jwtVerify(token, publicKey, { issuer: 'https://idp.example', audience: url });
    const t1 = performance.now();
    const problem = await check.problem(proof, { method: 'POST', url }, token, key.thumbprint);
    const t2 = performance.now();
    if (problem !== undefined) throw new Error(problem);
    tokenTimes.push((t1 - t0) * 1000);
    proofTimes.push((t2 - t1) * 1000);
  }
  return { tokenUs: median(tokenTimes), proofUs: median(proofTimes), ...(await exchangeCost()) };
}

export function dpopTable(row: DpopRow): string {
  return [
    '| check | median µs | vs the token’s check |',
    '| --- | ---: | ---: |',
    `| the access token (JWT, ES256) | ${row.tokenUs.toFixed(0)} | 1.00x |`,
    `| its DPoP proof (ES256, thumbprint, htu, ath, jti) | ${row.proofUs.toFixed(0)} | ${(row.proofUs / row.tokenUs).toFixed(2)}x |`,
    `| a token exchange (RFC 8693), kept from the caller's first call | ${row.keptUs.toFixed(1)} | ${(row.keptUs / row.tokenUs).toFixed(2)}x |`,
    `| a token exchange asked of an authorization server on loopback | ${row.askedUs.toFixed(0)} | ${(row.askedUs / row.tokenUs).toFixed(2)}x |`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(searchTable(searchCost()));
  console.log(dpopTable(await dpopCost()));
}
