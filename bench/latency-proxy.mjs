// Nodes "farther away" for the benchmark: TCP proxies on 127.0.0.1 that
// forward to local Redis nodes and hold every chunk for a fixed delay in
// each direction, as a node in another zone adds to each round trip. They
// run in a process of their own (forked by startFarNodes), so their work
// lands on neither the libraries' event loop nor the Redis nodes', and it
// is the same for every library. Byte order per connection is kept: chunks
// wait in one timer list (same delay), which fires in insertion order.
import { fork } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/**
 * Starts one delaying proxy per target port, in a child process.
 * @param {number[]} targetPorts ports of Redis nodes on 127.0.0.1
 * @param {number} oneWayMs delay added in each direction (whole ms: Node's timers)
 * @returns {Promise<{ urls: string[], stop: () => Promise<void> }>}
 */
export async function startFarNodes(targetPorts, oneWayMs) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', String(oneWayMs), ...targetPorts.map(String)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ports = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`latency proxy exited (${code})`)));
  });
  return {
    urls: ports.map((port) => `redis://127.0.0.1:${port}`),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Forwards `from` to `to`, each chunk `delayMs` later; a close on either side closes both. */
function pipeDelayed(from, to, delayMs) {
  from.on('data', (chunk) => setTimeout(() => to.writable && to.write(chunk), delayMs));
  from.on('close', () => setTimeout(() => to.destroy(), delayMs));
  from.on('error', () => undefined);
}

function listen(targetPort, delayMs) {
  const server = createServer({ noDelay: true }, (client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort, noDelay: true });
    pipeDelayed(client, upstream, delayMs);
    pipeDelayed(upstream, client, delayMs);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

if (process.argv[2] === '--serve') {
  const [delay, ...targets] = process.argv.slice(3).map(Number);
  const ports = await Promise.all(targets.map((port) => listen(port, delay)));
  // Ends with the bench: when its IPC channel closes (the bench exited or was killed).
  process.on('disconnect', () => process.exit(0));
  process.send(ports);
}
