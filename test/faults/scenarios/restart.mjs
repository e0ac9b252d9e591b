// Shared by the kill -9 scenarios: nodes lose their keys.
const shuffled = () => [0, 1, 2, 3, 4].sort(() => Math.random() - 0.5);

/**
 * The documented hazard, made likely: two nodes go down (kill -9), so the
 * next holders hold exactly the other three; the two come back empty and
 * one of the three is killed and restarted empty at the same moment. Three
 * nodes now lack the holder's key: enough for a waiter that counts them.
 */
export async function restartHazard(h) {
  while (!h.stopping) {
    const [x, y, z] = shuffled();
    await Promise.all([h.servers[x].kill(), h.servers[y].kill()]);
    h.fault('kill-9', 2);
    await h.sleep(h.cfg.ttl * 0.4);
    await h.servers[z].kill();
    h.fault('kill-9');
    await Promise.all([h.servers[x].restart(), h.servers[y].restart(), h.servers[z].restart()]);
    // Then a while with every node up and counted (with a quarantine, once
    // it is over), so that locks are taken between two rounds.
    await h.sleep(h.cfg.ttl * 1.5 + (h.cfg.restartQuarantine ?? 0));
  }
  await Promise.all(h.servers.filter((s) => s.pid === undefined).map((s) => s.restart()));
}
