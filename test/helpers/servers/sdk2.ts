// An MCP SDK 2.x server on stdio: `modern` answers only the 2026-07-28 revision (initialize is refused), `dual`
// serves both eras. The era is the first argument.
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { sdk2Server } from '../sdk2.js';

const era = process.argv[2] === 'modern' ? 'modern' : 'dual';
serveStdio(() => sdk2Server(`sdk2-${era}`), { legacy: era === 'modern' ? 'reject' : 'serve' });
