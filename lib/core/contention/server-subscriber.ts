import type { Redis } from 'ioredis';
import { DROP_AT_ONCE } from '../nodes/close-client.js';
import type { RedlockNode } from '../nodes/redlock-node.js';

/**
 * Subscribes to a single server's announcements on `channel` over a
 * connection of its own (a `duplicate()` of the node's client, which the
 * caller closes): `onMessage` for each message, `onSubscribed` once the
 * subscription is live, `onResubscribed` each time it is live again after
 * a reconnection (messages published meanwhile were lost).
 */
export function subscribeServer(
  node: RedlockNode,
  channel: string,
  onMessage: (message: string) => void,
  onSubscribed: () => void,
  onResubscribed: () => void,
): Redis {
  // ioredis reconnects (unless a borrowed client's retryStrategy gives
  // up); we subscribe again ourselves on 'ready' (below), and a waiter's
  // fallback timer covers the messages missed meanwhile.
  const sub = node.client.duplicate({
    lazyConnect: false,
    maxRetriesPerRequest: null,
    enableAutoPipelining: false,
    // SUBSCRIBE leaves while the connection is still being made: a
    // borrowed client without an offline queue would have it refused,
    // and no waiter would ever be woken.
    enableOfflineQueue: true,
    // ioredis's own re-subscription leaves its promise unhandled: a
    // connection closed for good while that SUBSCRIBE is out (quit()
    // dropping a subscriber whose node hangs, or a borrowed client's
    // retryStrategy giving up) would be an unhandled rejection, fatal to
    // the user's process by Node's default. We subscribe again ourselves,
    // below.
    autoResubscribe: false,
    ...DROP_AT_ONCE,
  });
  sub.on('error', () => undefined);
  sub.on('message', (_channel: string, message: string) => onMessage(message));
  sub.subscribe(channel).then(onSubscribed, () => undefined);
  let connected = false;
  sub.on('ready', () => {
    if (connected) sub.subscribe(channel).then(onResubscribed, () => undefined);
    connected = true;
  });
  return sub;
}
