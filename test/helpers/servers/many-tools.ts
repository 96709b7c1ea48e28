// A legacy server with hundreds of tools, for tool search: every verb of VERBS on every object of OBJECTS
// (`<verb>_<object>`, "<Verb> a <object> of the tracker"), listed 100 a page. `grow` adds a tool `grown_<n>`
// ("Grows a <word> plant", the word its argument) and says its list changed. A call of any other tool answers
// with its name and arguments.
import { serve, write } from './mini.js';
import { describe, OBJECTS, VERBS } from './tracker-words.js';

type Json = Record<string, unknown>;
const tools: Json[] = [];
for (const verb of VERBS)
  for (const object of OBJECTS)
    tools.push({
      name: `${verb}_${object}`,
      description: describe(verb, object),
      inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
    });
tools.push({ name: 'grow', description: 'Adds a tool to this server.', inputSchema: { type: 'object', properties: { word: { type: 'string' } } } });
const PAGE = 100;

serve(
  'many-tools',
  (msg) => {
    const params = (msg.params ?? {}) as Json;
    if (msg.method === 'tools/list') {
      const start = Number(params.cursor ?? 0);
      const page = tools.slice(start, start + PAGE);
      return { tools: page, ...(start + PAGE < tools.length ? { nextCursor: String(start + PAGE) } : {}) };
    }
    if (msg.method !== 'tools/call') return { error: 'unknown method' };
    const args = (params.arguments ?? {}) as Json;
    if (params.name === 'grow') {
      const name = `grown_${tools.length}`;
      tools.push({ name, description: `Grows a ${String(args.word)} plant.`, inputSchema: { type: 'object' } });
      write({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      return { content: [{ type: 'text', text: name }] };
    }
    return { content: [{ type: 'text', text: `${String(params.name)} ${JSON.stringify(args)}` }] };
  },
  { initializeCapabilities: { tools: { listChanged: true } } },
);
