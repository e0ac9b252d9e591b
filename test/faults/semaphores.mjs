// Semaphores other than the library's, driven by the same client workload
// (client.mjs, `semaphore` config field) so that the checker judges them by
// the same rule: never more than `permits` holders of a resource within
// their validity.
//
// - PerNodeSemaphore ('per-node', the per-node-counting mutant): the design
//   of the peers, done otherwise as the library does it. Each node keeps a
//   sorted set capped at `permits` (members: lock values, scores: their
//   expiry on the node's clock); an attempt asks every node at once, holds
//   when a quorum (N/2+1) admitted it within the validity (ttl - elapsed -
//   drift, on the monotonic clock, as the library counts it), and otherwise
//   takes back what it got. Its flaw is the counting itself: each node caps
//   its own set, not the quorum, so with 5 nodes (quorum 3) and 3 permits
//   up to floor(3 * 5 / 3) = 5 holders fit, each admitted by a different
//   3 of the 5 nodes.
// - PeerSemaphore ('redis-semaphore'): redis-semaphore's RedlockSemaphore
//   (the devDependency), as its README shows it: a new instance per
//   acquire, `acquire()`, then `release()`. It caps a sorted set on each
//   node the same way, with scores from the client's Date.now() at each
//   attempt's start, and counts a quorum of admissions however late it
//   came. It has no validity of its own: a holder here counts as valid
//   until the start of the attempt that admitted it plus its lockTimeout
//   (the ttl), less the drift the library allows for, as the permits it got
//   live on the nodes until then (the nodes drop older entries by that
//   score). Its attempts are timed here by wrapping the nodes' evalsha,
//   which it calls at each attempt's start for each node.
//
// Both hand out lock-like objects with what the workload reads: value,
// resources, validUntil (epoch ms, as the library's), remaining(),
// isHeld, signal (never aborted: no watchdog) and release().
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
/** The library's drift allowance (driftFactor 0.01, plus 2 ms). */
const drift = (ttl) => ttl * 0.01 + 2;

class SimpleLock {
  constructor(resource, value, validUntil, onRelease) {
    this.resources = [resource];
    this.value = value;
    this.validUntil = validUntil;
    this.fencingToken = undefined;
    this.signal = new AbortController().signal;
    this.released = false;
    this.onRelease = onRelease;
  }
  remaining() {
    return this.released ? 0 : Math.max(0, this.validUntil - now());
  }
  get isHeld() {
    return this.remaining() > 0;
  }
  async release() {
    if (this.released) return;
    this.released = true;
    await this.onRelease();
  }
  async extend() {
    throw new Error('extend() is not part of this workload');
  }
}

const notAcquired = () => Object.assign(new Error('not acquired'), { reason: 'busy' });

const connect = (urls) =>
  urls.map((url) => {
    const c = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 1000, lazyConnect: false });
    c.on('error', () => undefined);
    return c;
  });

// Admits ARGV[1] while fewer than ARGV[2] unexpired members are there
// (or refreshes it when it is one of them), for ARGV[3] ms on the node's
// clock; 1 admitted, 0 full.
const ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
  return 1
end
return 0`;

/** The per-node-counting mutant (see above). */
export class PerNodeSemaphore {
  constructor(urls, { ttl, nodeTimeout, retryDelay, retryJitter }) {
    this.nodes = connect(urls);
    this.quorum = Math.floor(urls.length / 2) + 1;
    Object.assign(this, { ttl, nodeTimeout, retryDelay, retryJitter });
  }
  async ready() {
    await Promise.all(this.nodes.map((n) => n.ping()));
  }
  /** `command` on node `n`, its reply (or false) within nodeTimeout. */
  bounded(n, command) {
    let timer;
    return Promise.race([
      command(this.nodes[n]),
      new Promise((resolve) => (timer = setTimeout(resolve, this.nodeTimeout, false))),
    ])
      .catch(() => false)
      .finally(() => clearTimeout(timer));
  }
  /** Asks node `n` to admit `value`: true when it did within nodeTimeout. */
  ask(n, ...args) {
    return this.bounded(n, (node) => node.eval(ADMIT, 1, ...args).then((r) => r === 1));
  }
  /** Asks every node at once; settles, as the library's attempt does, once a quorum admitted it or cannot. */
  attempt(key, value, permits) {
    return new Promise((resolve) => {
      const n = this.nodes.length;
      let yes = 0;
      let no = 0;
      for (let i = 0; i < n; i++)
        this.ask(i, key, value, permits, this.ttl).then((ok) => {
          if (ok) yes++;
          else no++;
          if (yes >= this.quorum) resolve(true);
          else if (no > n - this.quorum) resolve(false);
        });
    });
  }
  takeBack(key, value) {
    return Promise.all(this.nodes.map((_, n) => this.bounded(n, (node) => node.zrem(key, value))));
  }
  async acquire(resource, { permits, waitTimeout }) {
    const key = 'fs:' + resource;
    const giveUp = now() + waitTimeout;
    for (;;) {
      const value = randomBytes(12).toString('base64url');
      const start = now();
      const granted = await this.attempt(key, value, permits);
      const validUntil = start + this.ttl - drift(this.ttl);
      if (granted && validUntil > now())
        return new SimpleLock(resource, value, validUntil, () => this.takeBack(key, value));
      await this.takeBack(key, value);
      if (now() >= giveUp) throw notAcquired();
      await sleep(Math.min(giveUp - now(), this.retryDelay + Math.random() * this.retryJitter));
    }
  }
  async quit() {
    await Promise.all(this.nodes.map((n) => n.quit().catch(() => undefined)));
  }
}

/** redis-semaphore's RedlockSemaphore, as its users call it (see above). */
export class PeerSemaphore {
  constructor(urls, { ttl, retryDelay }) {
    const { RedlockSemaphore } = createRequire(import.meta.url)('redis-semaphore');
    this.RedlockSemaphore = RedlockSemaphore;
    this.nodes = connect(urls);
    Object.assign(this, { ttl, retryDelay });
    // identifier -> start of its latest attempt (this process's clock). Its
    // acquire script's arguments: key, limit, identifier, lockTimeout, now.
    this.attemptAt = new Map();
    for (const node of this.nodes) {
      const evalsha = node.evalsha.bind(node);
      node.evalsha = (sha, numKeys, ...args) => {
        if (numKeys === 1 && args.length === 5) this.attemptAt.set(args[2], now());
        return evalsha(sha, numKeys, ...args);
      };
    }
  }
  async ready() {
    await Promise.all(this.nodes.map((n) => n.ping()));
  }
  async acquire(resource, { permits, waitTimeout }) {
    const semaphore = new this.RedlockSemaphore(this.nodes, resource, permits, {
      lockTimeout: this.ttl,
      acquireTimeout: waitTimeout,
      retryInterval: this.retryDelay,
      refreshInterval: 0,
    });
    const id = semaphore.identifier;
    const acquired = await semaphore.tryAcquire().finally(() => setImmediate(() => this.attemptAt.delete(id)));
    const start = this.attemptAt.get(id);
    if (!acquired) throw notAcquired();
    return new SimpleLock(resource, semaphore.identifier, start + this.ttl - drift(this.ttl), () =>
      semaphore.release(),
    );
  }
  async quit() {
    await Promise.all(this.nodes.map((n) => n.quit().catch(() => undefined)));
  }
}
