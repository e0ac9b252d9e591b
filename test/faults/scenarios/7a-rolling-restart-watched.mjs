// Nemesis 7 without recreateOnExtend (the default): rolling empty restarts
// of every node while long watched locks are held (see rolling.mjs). Each
// restart takes the key from the node it hits and an extension never puts
// it back, so a lock that lives through three restarts is down to two
// nodes: its next extension fails and it is lost (its signal aborts, which
// is no violation). The figure is info.lostWatched.
import { LONG_WATCHED, lostWatched, rollingRestarts } from './rolling.mjs';

export default {
  name: 'rolling-restart-watched',
  title: '7 rolling empty restarts, long watched locks',
  expected: 0,
  config: LONG_WATCHED,
  nemesis: rollingRestarts,
  checks: lostWatched,
};
