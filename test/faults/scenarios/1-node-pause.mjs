// SIGSTOP/SIGCONT of a minority of the nodes, then of a majority, in turn:
// with a minority frozen locks go on; with a majority frozen every acquire
// fails within its bounds (the checker's liveness rule) and nothing hangs.
const pick = (k) => [0, 1, 2, 3, 4].sort(() => Math.random() - 0.5).slice(0, k);

export default {
  name: 'node-pause',
  title: '1 SIGSTOP minority / majority of nodes',
  expected: 0,
  config: {
    resources: ['r0', 'r1', 'r2', 'r3'],
    ttl: 500,
    nodeTimeout: 50,
    waitTimeout: 1000,
    pWatch: 0.02,
    watchHold: 2,
  },
  async nemesis(h) {
    for (let round = 0; !h.stopping; round++) {
      const frozen = pick(round % 2 === 0 ? 1 + (round % 4 === 0 ? 1 : 0) : 3);
      for (const i of frozen) h.servers[i].freeze();
      h.fault(frozen.length >= 3 ? 'sigstop-majority' : 'sigstop-minority');
      await h.sleep(2 * h.cfg.ttl);
      for (const i of frozen) h.servers[i].thaw();
      await h.sleep(h.cfg.ttl);
    }
  },
};
