// The semaphore workload (`acquire(resource, { permits: 3 })`) under every
// nemesis of the mutex scenarios: the same faults, with the checker's
// semaphore rules (checker.mjs: never more than 3 holders of a resource
// within their validity; each permit slot a mutex). Fewer resources than
// the mutex rows where those have many, so that every permit is wanted:
// each row must see 3 holders of one resource at once (`require`), or it
// proved nothing. The bounded (CI) run has the rows marked `ci: true`;
// --full runs them all. Last, the peer's RedlockSemaphore (redis-semaphore)
// on the same workload: a report of what it does, not a verdict.
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
import rollingWatched from './7a-rolling-restart-watched.mjs';

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
    expected,
    allowed,
    config: { ...base.config, workload: 'semaphore', permits: PERMITS, ...config },
    require: (report) => base.require?.(report) ?? fullOnce(report),
  };
}

export default [
  variant(contention, { ci: true }),
  variant(nodePause, { ci: true, config: { resources: ['r0', 'r1', 'r2'] } }),
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
  variant(rollingWatched, { config: { resources: ['r0'] } }),
  {
    ...contention,
    name: 'sem-peer-redis-semaphore',
    title: "8 semaphore: redis-semaphore's RedlockSemaphore (peer), contention, no faults",
    ci: false,
    expected: 'report',
    config: {
      ...contention.config,
      workload: 'semaphore',
      permits: PERMITS,
      semaphore: 'redis-semaphore',
      pOverrun: 0,
    },
  },
];
