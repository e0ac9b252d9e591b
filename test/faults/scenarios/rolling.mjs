// Shared by the rolling-restart scenarios of nemesis 7: every node in turn
// is killed (-9) and restarted empty at once, one at a time, 0.7 ttl
// apart: more than a watchdog tick (a third of the lease) between two
// restarts, so a lock kept by the watchdog has an extension between them.

/** Restarts node 0, 1, 2, 3, 4, 0, ... empty, until the run stops. */
export async function rollingRestarts(h) {
  for (let i = 0; !h.stopping; i = (i + 1) % 5) {
    await h.servers[i].restart();
    h.fault('restart-empty');
    await h.sleep(h.cfg.ttl * 0.7);
  }
}

/** Every section is watched and long: 4 leases (2.4 s at ttl 600). */
export const LONG_WATCHED = {
  resources: ['r0', 'r1', 'r2', 'r3'],
  ttl: 600,
  nodeTimeout: 100,
  waitTimeout: 3000,
  pWatch: 1,
  watchHold: 4,
  pOverrun: 0,
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
