// Nodes "farther away": TCP proxies on 127.0.0.1 that forward to local
// Redis nodes and hold every chunk for a fixed delay in each direction, as a
// node in another zone adds to each round trip. Byte order per connection
// is kept: the chunks of one direction wait in one timer list (same delay),
// which fires in insertion order.
// - `listenDelayed`: one proxy in this process (tests: its work is small and
//   nothing there measures CPU);
// - `startFarNodes`: proxies in a process of their own (the bench: their
//   work lands on neither the libraries' event loop nor the Redis nodes',
//   and it is the same for every library).
import { fork } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** Forwards `from` to `to`, each chunk `delayMs` later; a close on either side closes both. */
function pipeDelayed(from, to, delayMs) {
  from.on('data', (chunk) => setTimeout(() => to.writable && to.write(chunk), delayMs));
  from.on('close', () => setTimeout(() => to.destroy(), delayMs));
  from.on('error', () => undefined);
}

/**
 * A proxy in this process to the Redis node on `targetPort`, adding
 * `oneWayMs` in each direction (whole ms: Node's timers).
 * @param {number} targetPort
 * @param {number} oneWayMs
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export async function listenDelayed(targetPort, oneWayMs) {
  const sockets = new Set();
  const track = (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    return socket;
  };
  const server = createServer({ noDelay: true }, (client) => {
    const upstream = track(createConnection({ host: '127.0.0.1', port: targetPort, noDelay: true }));
    track(client);
    pipeDelayed(client, upstream, oneWayMs);
    pipeDelayed(upstream, client, oneWayMs);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Starts one delaying proxy per target port, in a child process that ends
 * with this one.
 * @param {number[]} targetPorts ports of Redis nodes on 127.0.0.1
 * @param {number} oneWayMs delay added in each direction (whole ms)
 * @returns {Promise<{ urls: string[], stop: () => Promise<void> }>}
 */
export async function startFarNodes(targetPorts, oneWayMs) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', String(oneWayMs), ...targetPorts.map(String)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const urls = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`latency proxy exited (${code})`)));
  });
  return {
    urls,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

if (process.argv[2] === '--serve') {
  const [delay, ...targets] = process.argv.slice(3).map(Number);
  const proxies = await Promise.all(targets.map((port) => listenDelayed(port, delay)));
  // Ends with its parent: when the IPC channel closes (the parent exited or was killed).
  process.on('disconnect', () => process.exit(0));
  process.send(proxies.map((p) => p.url));
}
