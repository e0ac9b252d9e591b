// kill -9 of one node at a time, in turn (0, 1, ... 4, 0, ...), restarted
// empty at once, with fencing: a single restart is within what the quorum
// tolerates, for the locks and for the tokens (every later quorum still
// meets a node with the latest token); the fenced store accepts no stale
// write and tokens keep growing.
export default {
  name: 'rolling-restart-fenced',
  title: '2 rolling kill -9 of one node, fenced',
  expected: 0,
  config: { ttl: 500, nodeTimeout: 100, waitTimeout: 1500, fenced: true, gap: [1, 6] },
  async nemesis(h) {
    for (let i = 0; !h.stopping; i = (i + 1) % 5) {
      await h.servers[i].kill();
      h.fault('kill-9', 1, i);
      await h.servers[i].restart();
      h.fault('restarted', 0, i);
      await h.sleep(h.cfg.ttl * 1.5);
    }
  },
};
