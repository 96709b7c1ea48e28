// The conformance fixture (test/helpers/conformance-server.ts) on stdio, dual-era, for `mcp-frame serve` to front.
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { type ChangeNotifier, conformanceServer } from '../conformance-server.js';

let instance: ReturnType<typeof conformanceServer> | undefined;
const notifier: ChangeNotifier = {
  toolsChanged: () => void instance?.sendToolListChanged(),
  promptsChanged: () => void instance?.sendPromptListChanged(),
  resourceUpdated: (uri) => void instance?.server.sendResourceUpdated({ uri }),
};
serveStdio(() => {
  instance = conformanceServer(notifier);
  return instance;
});
