// kill -9 of one node at a time, in turn (0, 1, ... 4, 0, ...), restarted
// empty at once, with fencing and restartQuarantine. Even one empty restart
// is the documented hazard without a quarantine: a lock held on exactly a
// quorum (the other nodes still had the previous holder's key when its
// request came) drops below it, and the checker found second holders here
// (9 in 10,067 operations) before the quarantine was added. With it: no
// second holder, the fenced store accepts no stale write, and tokens keep
// growing (every later quorum still meets a node with the latest token).
export default {
  name: 'rolling-restart-fenced',
  title: '2 rolling kill -9 of one node, fenced, restartQuarantine',
  expected: 0,
  config: { ttl: 500, nodeTimeout: 100, waitTimeout: 1500, fenced: true, gap: [1, 6], restartQuarantine: 600 },
  async nemesis(h) {
    for (let i = 0; !h.stopping; i = (i + 1) % 5) {
      await h.servers[i].kill();
      h.fault('kill-9', 1, i);
      await h.servers[i].restart();
      h.fault('restarted', 0, i);
      // Uptime comes in whole seconds: a restarted node counts after 1 to 2 s.
      await h.sleep(h.cfg.ttl * 2);
    }
  },
};
