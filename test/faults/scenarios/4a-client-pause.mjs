// A holder process paused (SIGSTOP) past its lease, the GC-pause case,
// without fencing. Workers check the lock before their work and write
// after it, and the pause falls in between: the checker must find the
// stale writes (lost updates): the documented limit of every lease lock.
export default {
  name: 'client-pause',
  title: '4 holder SIGSTOP past its lease, no fencing',
  expected: ['lost'],
  config: { resources: ['r0', 'r1', 'r2', 'r3'], ttl: 500, waitTimeout: 1500, gap: [20, 60], checkBeforeGap: true },
  nemesis: pauseHolders,
};

/** SIGSTOP a client that holds a lock, for 1.5 to 2 leases, then SIGCONT. */
export async function pauseHolders(h) {
  while (!h.stopping) {
    const holder = h.clients.find((c) => !c.exited && h.holding(c.id).length > 0);
    if (!holder) {
      await h.sleep(5);
      continue;
    }
    holder.child.kill('SIGSTOP');
    h.fault('sigstop-client', 1, holder.id);
    await h.sleep(h.cfg.ttl * (1.5 + Math.random() / 2));
    holder.child.kill('SIGCONT');
    h.fault('sigcont-client', 0, holder.id);
    await h.sleep(h.cfg.ttl);
  }
}
