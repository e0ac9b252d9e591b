// kill -9 of nodes, restarted empty, without restartQuarantine: the checker
// must find the documented hazard (two holders at once).
import { restartHazard } from './restart.mjs';

export default {
  name: 'restart-empty',
  title: '2 kill -9 + empty restart, no quarantine',
  expected: ['overlap'],
  allowed: ['lost'], // the second holder's writes
  config: {
    resources: ['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'],
    ttl: 1000,
    nodeTimeout: 100,
    waitTimeout: 2000,
    pLong: 0.3,
    longGap: [100, 250],
  },
  nemesis: restartHazard,
};
