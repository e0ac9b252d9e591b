// Nemesis 7 without recreateOnExtend (the default): rolling empty restarts
// of every node while long watched locks are held. Each restart takes the
// key from the nodes it hits, and an extension never puts it back: after
// the third restart in a lock's life two nodes hold it, its next
// extension fails and it is lost (reported: its signal aborts); until
// that extension, the three restarted nodes can grant it to a waiter,
// which the checker must find (the restart hazard of nemesis 2).
import { LONG_WATCHED, lostWatched, rollingRestarts } from './rolling.mjs';

export default {
  name: 'rolling-restart-watched',
  title: '7 rolling empty restarts, long watched locks',
  expected: ['overlap'],
  config: LONG_WATCHED,
  nemesis: rollingRestarts,
  checks: lostWatched,
};
