// The demo MCP server over stdio (see demo.ts). Run: node dist/examples/server.js
import { VERSION } from '../lib/version.js';
import { serveDemo } from './demo.js';

process.stderr.write(`mcp-frame demo server ${VERSION} ready on stdio\n`);
await serveDemo(process.stdin, process.stdout, (line) => process.stderr.write(`${line}\n`));
