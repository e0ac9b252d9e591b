// Silent partitions of real network links: each lock node runs in a
// network namespace of its own (scripts/netns-nodes.mjs), and the nemesis
// cuts 2 or 3 of the 5 off, in turn, for 2 to 4 ttl: packets lost both
// ways with nobody told ('blackhole'), or the node's interface down
// ('down'). Unlike the proxy's partition, no connection is ever reset: the
// clients' TCP connections stall until the kernel's retransmissions or the
// library's own reconnect get through. Checked: no safety violation, and
// after each heal of a majority the next grant (of any resource) comes
// within RECOVERY_MS. Skipped, with a message, where namespaces cannot be
// created (not root, no iproute2).
import { NetnsNodes, netnsUnavailable } from '../../../scripts/netns-nodes.mjs';

const rand = (a, b) => a + Math.random() * (b - a);
const pickN = (k, n = 5) => [...Array(n).keys()].sort(() => Math.random() - 0.5).slice(0, k);

/**
 * Heal of a majority to the next grant: the library's longest wait for a
 * SYN to a healed node (a connection attempt times out after 2 s, the
 * kernel's SYN retry at 1 s, the next attempt within 0.5 s: 1.5 s), a
 * worker's retry pacing, and a loaded 2-core machine's slack.
 */
const RECOVERY_MS = 3000;

let net;
/** Checker-clock times of the heals of a majority (the nemesis runs in the checker's process). */
const heals = [];

export default {
  name: 'netns-partition',
  title: '3 silent partitions of 2 or 3 nodes (network namespaces)',
  expected: 0,
  config: {
    resources: Array.from({ length: 8 }, (_, i) => `r${i}`),
    workers: 4,
    ttl: 1000,
    nodeTimeout: 100,
    waitTimeout: 2000,
    gap: [5, 30],
    pExtend: 0.3,
    pWatch: 0.03,
    watchHold: 1.5,
    pOverrun: 0.01,
  },
  /** Nodes of its own, in namespaces; `skip` says why not. */
  async setup() {
    const why = netnsUnavailable();
    if (why) return { skip: why };
    heals.length = 0;
    net = await NetnsNodes.start(5);
    return { servers: net.nodes, stop: () => net.stop() };
  },
  async nemesis(h) {
    const { ttl } = h.cfg;
    for (let round = 0; !h.stopping; round++) {
      const mode = round % 2 === 0 ? 'blackhole' : 'down';
      const cut = pickN(round % 4 < 2 ? 3 : 2);
      for (const i of cut) net.partition(i, mode);
      h.fault(`${mode}-${cut.length}`, 1, cut);
      await h.sleep(rand(2, 4) * ttl);
      for (const i of cut) net.heal(i);
      if (cut.length >= 3) heals.push(h.now());
      await h.sleep(ttl);
    }
    net.healAll();
  },
  checks({ ops }) {
    const grants = ops.map((o) => o.grant).filter((t) => t !== undefined).sort((a, b) => a - b);
    let late = 0;
    let max = 0;
    const each = [];
    for (const t of heals) {
      const next = grants.find((g) => g > t);
      if (next === undefined) continue; // the run ended first
      each.push(Math.round(next - t));
      max = Math.max(max, next - t);
      if (next - t > RECOVERY_MS) late++;
    }
    return {
      liveness: { recoveryLate: late },
      info: { healToGrantMs: each, maxHealToGrantMs: Math.round(max), recoveryBoundMs: RECOVERY_MS },
    };
  },
};
