// Root hooks for the whole suite (.mocharc.json's `require`): before every test the process's era verdicts are
// forgotten, since servers on 127.0.0.1 come and go and a port used again would otherwise inherit the verdict
// about the server that held it before.
import { defaultEraCache } from '../lib/client/connection.js';

export const mochaHooks = {
  beforeEach(): void {
    defaultEraCache.forget();
  },
};
