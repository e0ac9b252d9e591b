// Network faults through the proxy (one link per client and node): added
// delay on random links, a one-way stall of one client's requests (held,
// connection open, delivered late), connection resets mid-script, and a
// partition of one client from a majority of the nodes (both directions
// stalled, then the connections reset). Workers extend some locks and keep
// some under the watchdog, so late extensions and lost signals happen too.
const rand = (a, b) => a + Math.random() * (b - a);
const pickN = (k, n = 5) => [...Array(n).keys()].sort(() => Math.random() - 0.5).slice(0, k);

export default {
  name: 'network',
  title: '3 delay / one-way stall / reset / partition',
  expected: 0,
  config: {
    proxy: true,
    resources: Array.from({ length: 12 }, (_, i) => `r${i}`),
    workers: 6,
    ttl: 1000,
    nodeTimeout: 900,
    waitTimeout: 3000,
    gap: [5, 40],
    pExtend: 0.3,
    pWatch: 0.03,
    watchHold: 1.5,
    pOverrun: 0.01,
  },
  async nemesis(h) {
    const { ttl, clients } = h.cfg;
    const links = (c, nodes) => nodes.map((n) => `${c}:${n}`);
    const kinds = h.cfg.faults ?? ['delay', 'stall-one-way', 'reset', 'partition'];
    for (let round = 0; !h.stopping; round++) {
      const c = Math.floor(Math.random() * clients);
      switch (kinds[round % kinds.length]) {
        case 'delay': {
          // Delay: a third of the links, up to 0.3 ttl each way.
          const ids = pickN(7, clients * 5).map((k) => `${Math.floor(k / 5)}:${k % 5}`);
          for (const id of ids)
            await h.proxy.set([id], { up: { delay: rand(0, 0.3 * ttl) }, down: { delay: rand(0, 0.3 * ttl) } });
          h.fault('delay', ids.length);
          await h.sleep(2 * ttl);
          await h.proxy.heal();
          break;
        }
        case 'stall-one-way': {
          // One-way stall of one client's links to every node: its
          // requests (they land late), or the replies (they come back late).
          const ids = links(c, [0, 1, 2, 3, 4]);
          const dir = round % 8 === 1 ? 'up' : 'down';
          await h.proxy.set(ids, { [dir]: { stall: true } });
          h.fault(`stall-${dir === 'up' ? 'requests' : 'replies'}`);
          await h.sleep(rand(0.6, 0.9) * ttl);
          await h.proxy.set(ids, { [dir]: { stall: false } });
          await h.sleep(ttl / 2);
          break;
        }
        case 'reset': {
          // Reset of a few links mid-traffic.
          for (let k = 0; k < 5; k++) {
            await h.proxy.reset(links(Math.floor(Math.random() * clients), pickN(2)));
            h.fault('reset');
            await h.sleep(rand(0.1, 0.4) * ttl);
          }
          break;
        }
        case 'partition': {
          // Partition of one client from a majority.
          const ids = links(c, pickN(3));
          await h.proxy.set(ids, { up: { stall: true }, down: { stall: true } });
          h.fault('partition');
          await h.sleep(2 * ttl);
          await h.proxy.reset(ids);
          await h.proxy.set(ids, { up: { stall: false }, down: { stall: false } });
          await h.sleep(ttl);
          break;
        }
      }
    }
  },
};
