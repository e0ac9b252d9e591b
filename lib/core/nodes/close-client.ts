import type { Redis, RedisOptions } from 'ioredis';

/**
 * For clients the library owns: `closeClient` drops a connection only once
 * it is done with it (QUIT unanswered, or not connected), so ioredis's 2 s
 * grace before it destroys the socket would only keep the process alive.
 * For a client reconnecting to a node that is down, that timer even waits
 * on a socket closed already (ioredis #1247), and held an app's exit after
 * `quit()` for 2 s.
 */
export const DROP_AT_ONCE: RedisOptions = { disconnectTimeout: 0 };

/** How long a node may take to answer QUIT before its connection is dropped. */
export const QUIT_TIMEOUT_MS = 1000;

/**
 * Says QUIT, or drops the connection: at once when the client is not
 * connected (one connecting or reconnecting to a dead node would hold the
 * process open waiting), or after `QUIT_TIMEOUT_MS` without an answer (a
 * frozen or unreachable node keeps a connection `ready` for minutes).
 * Resolves once the socket is closed (ioredis's `end`), not when QUIT is
 * answered: an app that awaited `quit()` (or `app.close()`) then has no
 * socket of ours left open, and a test runner's open-handle check finds
 * none. That wait is bounded by `QUIT_TIMEOUT_MS` too.
 */
export async function closeClient(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  let timer: NodeJS.Timeout | undefined;
  const expire = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), QUIT_TIMEOUT_MS);
  });
  const ended = new Promise<true>((resolve) =>
    client.once('end', () => resolve(true)),
  );
  try {
    if (client.status === 'ready') {
      await drained(client, expire);
      const answered = await Promise.race([
        client.quit().then(
          () => true,
          () => false,
        ),
        expire,
      ]);
      if (!answered) client.disconnect();
    } else {
      client.disconnect();
    }
    // A client waiting to reconnect has no socket left and never says
    // 'end' after disconnect(): nothing to wait for.
    if (!client.stream || client.stream.destroyed) return;
    if (!(await Promise.race([ended, expire]))) client.disconnect();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits until `client` has no command waiting for a reply, or `expire`:
 * a script run by SHA that meets NOSCRIPT (a node restarted, or a script
 * first used) is sent again with its source once that reply arrives; a
 * QUIT sent before would turn the retry away, and a release settled at a
 * quorum would leave its key on that node for the whole lease.
 */
async function drained(client: Redis, expire: Promise<false>): Promise<void> {
  const queue = (client as unknown as { commandQueue?: { length: number } })
    .commandQueue;
  let expired = false;
  void expire.then(() => (expired = true));
  while (!expired && (queue?.length ?? 0) > 0)
    await new Promise((resolve) => setTimeout(resolve, 1));
}
