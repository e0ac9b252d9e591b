// Asymmetric network faults while workers hold long sections: 30% of them
// extend their lock late in its lease (0.3 to 0.6 ttl after the grant),
// some run past their validity. Two faults, in turn:
// - a stall of one client's requests (held, connection open), aimed at a
//   holder of that client granted 0.25 to 0.45 ttl earlier, for 0.9 ttl: its
//   late extension lands after its keys expired on the nodes;
// - slow replies: every reply to one client comes 0.5 ttl late for 3 ttl,
//   so its grants arrive with half their validity gone.
// The library must count both right (the mutants that do not are caught
// here). Waiters poll (JitteredRetry): no wait queues, so no key is handed
// to a waiter on release; 3c runs the same with the default wait strategy.
import network from './3-network.mjs';

export default {
  name: 'stall-long-sections',
  title: '3 aimed stalls / slow replies, late extensions',
  expected: 0,
  config: {
    ...network.config,
    pExtend: 0.3,
    extendAfter: [0.3, 0.6],
    pWatch: 0,
    pOverrun: 0.03,
    jittered: true,
  },
  async nemesis(h) {
    const { ttl, clients } = h.cfg;
    const all = (c) => [0, 1, 2, 3, 4].map((n) => `${c}:${n}`);
    for (let round = 0; !h.stopping; round++) {
      if (round % 2 === 0) {
        // Aim: a client with a holder granted 0.25-0.45 ttl ago (waits up to 2 s).
        let c;
        for (let tries = 0; c === undefined && tries < 400 && !h.stopping; tries++) {
          const t = h.now();
          c = h.clients.findIndex(
            (cl) => !cl.exited && h.holding(cl.id).some((o) => t - o.grant > 0.25 * ttl && t - o.grant < 0.45 * ttl),
          );
          if (c < 0) c = undefined;
          if (c === undefined) await h.sleep(5);
        }
        c ??= Math.floor(Math.random() * clients);
        await h.proxy.set(all(c), { up: { stall: true } });
        h.fault('stall-requests');
        await h.sleep(0.9 * ttl);
        await h.proxy.set(all(c), { up: { stall: false } });
      } else {
        const c = Math.floor(Math.random() * clients);
        await h.proxy.set(all(c), { down: { delay: 0.5 * ttl } });
        h.fault('slow-replies');
        await h.sleep(3 * ttl);
        await h.proxy.set(all(c), { down: { delay: 0 } });
      }
      await h.sleep(ttl / 2);
    }
  },
};
