// Shared by the rolling-restart scenarios of nemesis 7: every node in turn
// is killed (-9) and restarted empty at once, one at a time, 1.5 ttl
// apart: several watchdog ticks (a third of the lease each) between two
// restarts. Both scenarios run with restartQuarantine (700 ms, above the
// 600 ms lease), so that a restarted node cannot grant a lock another
// client holds through it (the hazard of nemesis 2, which would show here
// too: a lock granted on exactly three nodes, one of which restarts before
// its first extension, is down to two): what is left to compare is what
// the extensions do with the keys the restarts took.

/** Restarts node 0, 1, 2, 3, 4, 0, ... empty, until the run stops. */
export async function rollingRestarts(h) {
  // When each restart began and ended, on the checker's clock: kept in
  // cfg, so that a FAULTS_DUMP history has them beside the operations.
  h.cfg.restarts = [];
  for (let i = 0; !h.stopping; i = (i + 1) % 5) {
    const at = h.now();
    await h.servers[i].restart();
    h.cfg.restarts.push([i, at, h.now()]);
    h.fault('restart-empty');
    await h.sleep(h.cfg.ttl * 1.5);
  }
}

/**
 * Every section is watched and long: 4 leases (2.4 s at ttl 600), so each
 * lock lives through two or three restarts. The quarantine keeps a node
 * out for 0.7 s after each client reconnects to it: at most two nodes at
 * once, 900 ms apart.
 */
export const LONG_WATCHED = {
  resources: ['r0', 'r1', 'r2', 'r3'],
  ttl: 600,
  nodeTimeout: 100,
  waitTimeout: 3000,
  pWatch: 1,
  watchHold: 4,
  pOverrun: 0,
  restartQuarantine: 700,
};

/**
 * The watched locks lost while held (their signal aborted before the
 * section ended), as the report's info: without recreateOnExtend each
 * restart costs a lock one vote for good.
 */
export function lostWatched({ ops }) {
  const granted = ops.filter((o) => o.grant !== undefined && o.finished);
  return { info: { watched: granted.length, lostWatched: granted.filter((o) => o.lost).length } };
}
