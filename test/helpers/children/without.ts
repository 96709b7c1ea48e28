// `node --import <this> ...`: the packages named in MCP_FRAME_TEST_HIDE cannot be found (see without-hooks.ts).
import { register } from 'node:module';

register('./without-hooks.js', import.meta.url);
