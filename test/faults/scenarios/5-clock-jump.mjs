// A forward clock jump on one node: Redis keeps expiry as an absolute wall
// time, so for lock keys a jump of Δ is lowering every lock key's remaining
// lease by Δ (PEXPIRE to pttl - Δ, DEL when that is <= 0) from a side
// connection. One node whose clock keeps jumping (the same node all run
// long) is within what a quorum tolerates.
const rand = (a, b) => a + Math.random() * (b - a);

export default {
  name: 'clock-jump',
  title: '5 forward clock jumps on one node',
  expected: 0,
  config: { ttl: 500, waitTimeout: 1500, gap: [5, 40] },
  async nemesis(h) {
    const node = Math.floor(Math.random() * 5);
    while (!h.stopping) {
      await h.jump(node, Math.round(rand(0.5, 1) * h.cfg.ttl));
      h.fault('clock-jump');
      await h.sleep(rand(0.1, 0.3) * h.cfg.ttl);
    }
  },
};
