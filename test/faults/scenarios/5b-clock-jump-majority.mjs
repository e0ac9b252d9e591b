// Forward clock jumps on three nodes at once, which every two quorums of
// five share at least one of: a holder's keys vanish on a majority while
// it still counts them valid, so a second holder can get the lock. The
// checker must find it (the documented limit: run NTP in slew mode).
const pick = (k) => [0, 1, 2, 3, 4].sort(() => Math.random() - 0.5).slice(0, k);

export default {
  name: 'clock-jump-majority',
  title: '5 forward clock jump on 3 nodes at once',
  expected: ['overlap'],
  allowed: ['lost'], // the second holder's writes
  config: {
    resources: ['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'],
    ttl: 1000,
    waitTimeout: 2000,
    pLong: 0.3,
    longGap: [50, 150],
  },
  async nemesis(h) {
    while (!h.stopping) {
      await Promise.all(pick(3).map((i) => h.jump(i, 0.9 * h.cfg.ttl)));
      h.fault('clock-jump', 3);
      await h.sleep(h.cfg.ttl * 0.5);
    }
  },
};
