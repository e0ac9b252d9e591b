// The network nemesis: one TCP proxy per (client, node) link, in a process
// of its own (its work lands neither on the checker's event loop nor on the
// clients'), driven by IPC from the runner. Each link can, per direction:
// delay every chunk (order kept: a chunk is never sent before the one before
// it), stall (chunks are held, the connection stays open, and they are sent
// in order when the stall ends), and reset (every socket of the link is
// destroyed: a connection reset mid-script). A partition is a stall of both
// directions ended by a reset, as a real partition ends in timeouts.
import { fork } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** One direction of one connection: a queue that keeps byte order. */
class Pipe {
  constructor(link, dir, to) {
    this.link = link;
    this.dir = dir; // 'up' (client → node) or 'down'
    this.to = to;
    this.queue = [];
    this.timer = undefined;
  }
  push(chunk) {
    const delay = this.link[this.dir].delay;
    this.queue.push({ chunk, due: performance.now() + delay });
    this.pump();
  }
  pump() {
    if (this.timer) return;
    while (this.queue.length && !this.link[this.dir].stall) {
      const wait = this.queue[0].due - performance.now();
      if (wait > 0.5) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.pump();
        }, wait);
        return;
      }
      const { chunk } = this.queue.shift();
      if (this.to.writable) this.to.write(chunk);
    }
  }
}

class Link {
  constructor(id, targetPort) {
    this.id = id;
    this.targetPort = targetPort;
    this.up = { delay: 0, stall: false };
    this.down = { delay: 0, stall: false };
    this.pipes = new Set();
    this.sockets = new Set();
  }
  async listen() {
    this.server = createServer({ noDelay: true }, (client) => {
      const upstream = createConnection({ host: '127.0.0.1', port: this.targetPort, noDelay: true });
      const up = new Pipe(this, 'up', upstream);
      const down = new Pipe(this, 'down', client);
      this.pipes.add(up).add(down);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => {
          this.sockets.delete(s);
          this.pipes.delete(up);
          this.pipes.delete(down);
          client.destroy();
          upstream.destroy();
        });
      }
      client.on('data', (c) => up.push(c));
      upstream.on('data', (c) => down.push(c));
    });
    await new Promise((r) => this.server.listen(0, '127.0.0.1', r));
    return this.server.address().port;
  }
  set(state) {
    for (const dir of ['up', 'down']) if (state[dir]) Object.assign(this[dir], state[dir]);
    for (const p of this.pipes) p.pump();
  }
  reset() {
    for (const s of this.sockets) s.destroy();
  }
}

if (process.argv[2] === '--serve') {
  const links = new Map();
  process.on('disconnect', () => process.exit(0));
  process.on('message', async (m) => {
    if (m.cmd === 'open') {
      const ports = {};
      for (const { id, port } of m.links) {
        const link = new Link(id, port);
        links.set(id, link);
        ports[id] = await link.listen();
      }
      process.send({ seq: m.seq, ports });
    } else if (m.cmd === 'set') {
      for (const id of m.ids) links.get(id)?.set(m.state);
      process.send({ seq: m.seq });
    } else if (m.cmd === 'reset') {
      for (const id of m.ids) links.get(id)?.reset();
      process.send({ seq: m.seq });
    } else if (m.cmd === 'heal') {
      for (const link of links.values()) link.set({ up: { delay: 0, stall: false }, down: { delay: 0, stall: false } });
      process.send({ seq: m.seq });
    }
  });
}

/**
 * Starts the proxy process. `links`: `[{ id, port }]`, one per (client,
 * node) pair; resolves with `{ ports, set(ids, state), reset(ids), heal(), stop() }`.
 */
export async function startProxy(links) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let seq = 0;
  const waiting = new Map();
  child.on('message', (m) => {
    waiting.get(m.seq)?.(m);
    waiting.delete(m.seq);
  });
  const call = (msg) =>
    new Promise((resolve) => {
      const s = ++seq;
      waiting.set(s, resolve);
      child.send({ ...msg, seq: s });
    });
  const { ports } = await call({ cmd: 'open', links });
  return {
    ports,
    set: (ids, state) => call({ cmd: 'set', ids, state }),
    reset: (ids) => call({ cmd: 'reset', ids }),
    heal: () => call({ cmd: 'heal' }),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
