// The same faults with restartQuarantine (a restarted node does not count
// until it has been up longer than any lease): no violation.
import { restartHazard } from './restart.mjs';

export default {
  name: 'restart-quarantine',
  title: '2 kill -9 + empty restart, restartQuarantine',
  expected: 0,
  config: {
    resources: ['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'],
    ttl: 1000,
    nodeTimeout: 100,
    waitTimeout: 2000,
    pLong: 0.3,
    longGap: [100, 250],
    restartQuarantine: 1500,
  },
  nemesis: restartHazard,
};
