// 5b with clockMonitor on in every client. The jumps here are simulated by
// lowering the lock keys' leases (see 5-clock-jump.mjs); the nodes' TIME
// does not move, and TIME is all the monitor reads, so it sees nothing and
// the checker finds the same violation as in 5b. The row says what the
// monitor cannot do, not what it does against a real jump: that is shown
// on made-up readings (test/unit/drift-detector.spec.ts) and on real nodes
// that keep time (test/core/clock-monitor.spec.ts).
import majority from './5b-clock-jump-majority.mjs';

export default {
  ...majority,
  name: 'clock-jump-majority-monitor',
  title: '5 forward clock jump on 3 nodes at once, clockMonitor on (simulated jump: TIME unchanged)',
  config: { ...majority.config, redlock: { clockMonitor: { interval: 100 } } },
};
