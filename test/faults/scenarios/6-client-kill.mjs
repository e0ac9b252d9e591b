// kill -9 of client processes that hold locks (a fresh process takes the
// slot). A dead holder's lock is free again within one lease: the next
// grant of each resource it held (each permit slot, for a semaphore), to
// another process, comes within ttl plus the waiters' poll bound
// (retryDelay + retryJitter) of the kill.
const SLACK_MS = 250; // a loaded 2-core machine: event loops and forks

export default {
  name: 'client-kill',
  title: '6 kill -9 of lock-holding clients',
  expected: 0,
  config: { ttl: 500, waitTimeout: 10_000, gap: [5, 20] },
  async nemesis(h) {
    while (!h.stopping) {
      const slot = h.clients.findIndex((c) => !c.exited && h.holding(c.id).length > 0);
      if (slot < 0) {
        await h.sleep(5);
        continue;
      }
      await h.killClient(slot);
      h.fault('kill-9-client');
      await h.sleep(h.cfg.ttl * 1.5);
    }
  },
  checks({ cfg, ops, kills }) {
    const bound = cfg.ttl + cfg.retryDelay + cfg.retryJitter + SLACK_MS;
    let late = 0;
    let max = 0;
    for (const kill of kills)
      for (const held of kill.held) {
        const next = ops
          .filter((o) => (o.slot ?? o.r) === (held.slot ?? held.r) && o.c !== kill.client && o.grant > kill.t)
          .reduce((a, o) => Math.min(a, o.grant), Infinity);
        if (!Number.isFinite(next)) continue;
        max = Math.max(max, next - kill.t);
        if (next - kill.t > bound) late++;
      }
    return { liveness: { reacquireLate: late }, info: { maxReacquireMs: Math.round(max), reacquireBoundMs: bound } };
  },
};
