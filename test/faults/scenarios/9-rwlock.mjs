// The read/write workload (`acquire(resource, { mode })`, a writer for a
// fifth of the operations, a reader otherwise) under the nemeses of the
// mutex scenarios, with the checker's read/write rules (checker.mjs: never
// a writer overlapping another holder, reader or writer, within validity;
// no lost update by writers; no reader that sees the register change
// between its two reads). Readers overlapping each other is the point of
// the shape: each row must see two readers of one resource at once, and
// some writers (`require`), or it proved nothing. Read/write locks have no
// fencing tokens, so the fenced mutex rows run here without fencing: the
// rolling restarts on the plain register, and the holder pause only as the
// documented limit (4, stale writes and reads of a paused holder). The
// bounded (CI) run has the rows marked `ci: true`; --full runs them all.
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
import stallQueued from './3c-stall-long-sections-queued.mjs';
import clientPause from './4a-client-pause.mjs';
import clockJump from './5-clock-jump.mjs';
import clockJumpMajority from './5b-clock-jump-majority.mjs';
import clientKill from './6-client-kill.mjs';

/** Fails a run that never had two readers at once, or no writer. */
const meaningful = (report) =>
  report.info.maxReaders < 2
    ? `at most ${report.info.maxReaders} reader at once: readers never shared a resource`
    : report.info.writes === 0
      ? 'no writer was granted'
      : undefined;

function variant(base, { ci = false, config = {}, expected = base.expected, allowed = base.allowed, title } = {}) {
  return {
    ...base,
    name: `rw-${base.name}`,
    title: `9 read/write: ${title ?? base.title.replace(/^\d+\w? /, '')}`,
    ci,
    // --full: 10,000 operations, which the slower rows take more than 180 s to reach.
    fullMaxMs: 420_000,
    expected,
    allowed,
    config: { ...base.config, workload: 'rw', pWrite: 0.2, ...config },
    require: (report) => base.require?.(report) ?? meaningful(report),
  };
}

export default [
  variant(contention, { ci: true }),
  variant(nodePause, { ci: true }),
  // The documented hazard (an empty restart without quarantine): a writer
  // beside another holder, and what it brings along.
  variant(restartEmpty, { allowed: ['lost', 'torn'] }),
  variant(restartQuarantine),
  variant(rollingFenced, {
    config: { fenced: false },
    title: 'rolling kill -9 of one node, restartQuarantine (no fencing: read/write locks have none)',
  }),
  variant(network, { config: { resources: ['r0', 'r1', 'r2', 'r3'] } }),
  variant(stall, { config: { resources: ['r0', 'r1', 'r2', 'r3'] } }),
  variant(stallQueued, { config: { resources: ['r0', 'r1', 'r2', 'r3'] } }),
  // The documented limit: a paused holder's stale writes, and a paused
  // reader's second read after a writer came; never two holders within
  // validity.
  variant(clientPause, { allowed: ['torn'] }),
  variant(clockJump),
  variant(clockJumpMajority, { allowed: ['lost', 'torn'] }),
  variant(clientKill, { ci: true }),
];
