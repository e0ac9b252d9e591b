// Nemesis 7 with recreateOnExtend: the same rolling empty restarts; each
// watchdog extension that stands puts the key back (SET NX) on the nodes
// that lost it, so a watched lock never falls below four nodes between two
// restarts: no violation, and no watched lock lost to the restarts.
import { LONG_WATCHED, lostWatched, rollingRestarts } from './rolling.mjs';

export default {
  name: 'rolling-restart-recreate',
  title: '7 rolling empty restarts, long watched locks, recreateOnExtend',
  expected: 0,
  config: { ...LONG_WATCHED, redlock: { recreateOnExtend: true } },
  nemesis: rollingRestarts,
  checks: lostWatched,
  require: (report) =>
    report.info.lostWatched > 0 ? `${report.info.lostWatched} watched lock(s) lost to the restarts` : undefined,
};
