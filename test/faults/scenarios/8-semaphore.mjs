// The semaphore workload (`acquire(resource, { permits: 3 })`) under every
// nemesis of the mutex scenarios: the same faults, with the checker's
// semaphore rules (checker.mjs: never more than 3 holders of a resource
// within their validity; each permit slot a mutex). Fewer resources than
// the mutex rows where those have many, so that every permit is wanted:
// each row must see 3 holders of one resource at once (`require`), or it
// proved nothing. The bounded (CI) run has the rows marked `ci: true`;
// --full runs them all. Last, the peer's RedlockSemaphore (redis-semaphore)
// on the same workload, without faults, with paused nodes and with network
// faults: a report of what it does (most holders at once against its
// limit), not a verdict.
// Nemesis 7 (rolling restarts under long watched locks, a few operations
// a second: 10,000 would take half an hour) has no row here; 2c's rolling
// restarts cover the nemesis.
import contention from './0-contention.mjs';
import nodePause from './1-node-pause.mjs';
import restartEmpty from './2a-restart-empty.mjs';
import restartQuarantine from './2b-restart-quarantine.mjs';
import rollingFenced from './2c-rolling-restart-fenced.mjs';
import network from './3-network.mjs';
import stall from './3b-stall-long-sections.mjs';
import clientPause from './4a-client-pause.mjs';
import clientPauseFenced from './4b-client-pause-fenced.mjs';
import clockJump from './5-clock-jump.mjs';
import clockJumpMajority from './5b-clock-jump-majority.mjs';
import clientKill from './6-client-kill.mjs';

const PERMITS = 3;

/** Fails a run in which no resource ever had all its permits taken at once. */
const fullOnce = (report) =>
  report.info.maxHolders >= PERMITS
    ? undefined
    : `at most ${report.info.maxHolders} holders of a resource at once: the permits were never all taken`;

function variant(base, { ci = false, config = {}, expected = base.expected, allowed = base.allowed } = {}) {
  return {
    ...base,
    name: `sem-${base.name}`,
    title: `8 semaphore: ${base.title.replace(/^\d+\w? /, '')}`,
    ci,
    // --full: 10,000 operations, which the slower rows take more than 180 s to reach.
    fullMaxMs: 420_000,
    expected,
    allowed,
    config: { ...base.config, workload: 'semaphore', permits: PERMITS, ...config },
    require: (report) => base.require?.(report) ?? fullOnce(report),
  };
}

/**
 * Skewed links, no other fault: client c's requests reach node n after
 * ((n - c) mod 5) * 3 ms (through the proxy), so each client reaches the
 * nodes in another order and concurrent attempts are admitted first by
 * different nodes: what a semaphore counting per node needs to go over
 * its limit (up to floor(permits * N / quorum) = 5 holders for 3 permits
 * on 5 nodes).
 */
const skew = {
  name: 'skew',
  title: '8 skewed links (each client nearest to another node), no faults',
  expected: 0,
  config: { proxy: true, gap: [1, 6] },
  async nemesis(h) {
    for (let c = 0; c < h.cfg.clients; c++)
      for (let n = 0; n < 5; n++) await h.proxy.set([`${c}:${n}`], { up: { delay: ((n - c + 5) % 5) * 3 } });
    h.fault('skew');
  },
};

/**
 * A split network, for the whole run: 5 clients of 2 workers on one
 * resource, client c reaching only the nodes of QUORUMS[c], its links to
 * the other two stalled both ways (a silent partition, as in 3's). Every
 * client then holds through a quorum of its own, and no node is reached
 * by more than 3 clients. The library's permits are mutexes, so nothing
 * changes for the bound; a semaphore that counts per node admits up to 5
 * holders of 3 permits here (no node ever sees more than 3 at once): what
 * the per-node-counting mutant is run on.
 */
const QUORUMS = [
  [0, 1, 2],
  [0, 1, 3],
  [0, 2, 4],
  [1, 3, 4],
  [2, 3, 4],
];
const split = {
  name: 'split',
  title: '8 split network (each client reaches another 3 of the 5 nodes), no other fault',
  expected: 0,
  config: { proxy: true, clients: 5, workers: 2, resources: ['r0'], gap: [5, 20] },
  async nemesis(h) {
    for (let c = 0; c < h.cfg.clients; c++) {
      const cut = [0, 1, 2, 3, 4].filter((n) => !QUORUMS[c % 5].includes(n)).map((n) => `${c}:${n}`);
      await h.proxy.set(cut, { up: { stall: true }, down: { stall: true } });
    }
    h.fault('split');
  },
};

export default [
  variant(contention, { ci: true }),
  variant(skew),
  variant(split),
  variant(nodePause, { config: { resources: ['r0', 'r1', 'r2'] } }),
  // The documented hazard (an empty restart without quarantine) found as
  // more than 3 holders, beside the per-slot second holders behind it.
  variant(restartEmpty, {
    config: { resources: ['r0', 'r1', 'r2'] },
    expected: ['excess'],
    allowed: ['overlap', 'lost'],
  }),
  variant(restartQuarantine, { config: { resources: ['r0', 'r1', 'r2'] } }),
  variant(rollingFenced),
  variant(network, { ci: true, config: { resources: ['r0', 'r1', 'r2'] } }),
  variant(stall, { config: { resources: ['r0', 'r1', 'r2'] } }),
  // The paused holder's stale writes (its permit slot's register), and no
  // more than 3 holders within validity.
  variant(clientPause, { config: { resources: ['r0', 'r1'] } }),
  variant(clientPauseFenced, { config: { resources: ['r0', 'r1'] } }),
  variant(clockJump),
  variant(clockJumpMajority, {
    config: { resources: ['r0', 'r1', 'r2'] },
    expected: ['excess'],
    allowed: ['overlap', 'lost'],
  }),
  variant(clientKill, { ci: true }),
  // The peer, without faults, on skewed links, with nodes paused, with network faults.
  peer(contention, ''),
  peer(skew, '-skew'),
  peer(nodePause, '-node-pause'),
  peer(network, '-network'),
];

/** redis-semaphore's RedlockSemaphore on `base`'s faults: a report row (no verdict), --full or --only. */
function peer(base, suffix) {
  return {
    ...variant(base),
    name: `sem-peer-redis-semaphore${suffix}`,
    title: `8 semaphore: redis-semaphore's RedlockSemaphore (peer), ${base.title.replace(/^\d+\w? /, '')}`,
    expected: 'report',
    require: undefined,
    config: {
      ...variant(base).config,
      semaphore: 'redis-semaphore',
      // Plain sections: it has no extend() or watchdog of ours.
      pExtend: 0,
      pWatch: 0,
    },
  };
}
