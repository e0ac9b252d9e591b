// The same pauses with fencing: every write goes through a FencedStore, so
// the paused holder's late write is refused. No stale write may be
// accepted, and some must have been refused (or the pause proved nothing).
import { pauseHolders } from './4a-client-pause.mjs';

export default {
  name: 'client-pause-fenced',
  title: '4 holder SIGSTOP past its lease, fenced',
  expected: 0,
  config: {
    resources: ['r0', 'r1', 'r2', 'r3'],
    ttl: 500,
    waitTimeout: 1500,
    gap: [20, 60],
    checkBeforeGap: true,
    fenced: true,
  },
  nemesis: pauseHolders,
  require: (report) => (report.info.rejected > 0 ? undefined : 'no stale write was refused: the pauses missed'),
};
