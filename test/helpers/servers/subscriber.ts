// A legacy server with resource subscriptions: after resources/subscribe, it sends notifications/resources/updated
// for that URI every 20 ms (and one for another URI nobody asked for) until resources/unsubscribe.
import { serve, write } from './mini.js';

const timers = new Map<string, NodeJS.Timeout>();
serve(
  'subscriber',
  (msg) => {
    const uri = String((msg.params as { uri?: string } | undefined)?.uri);
    if (msg.method === 'resources/subscribe') {
      timers.set(
        uri,
        setInterval(() => {
          write({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
          write({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///other.txt' } });
        }, 20),
      );
      return {};
    }
    if (msg.method === 'resources/unsubscribe') {
      clearInterval(timers.get(uri));
      timers.delete(uri);
      return {};
    }
    return {};
  },
  { initializeCapabilities: { resources: { subscribe: true } } },
);
