// 3b with the default wait strategy (WakeOnRelease: waiters queue on the
// nodes, and a release may hand the key to the longest waiter outright).
// A holder keeps its queue place until it releases; if its lease lapses on
// the nodes while an extension of its is held in a stall, a release by the
// next holder can hand the key back to it, and the late extension then
// finds its value and succeeds (docs/faults.md, findings).
import stall from './3b-stall-long-sections.mjs';

export default {
  ...stall,
  name: 'stall-long-sections-queued',
  title: '3 aimed stalls / slow replies, wait queues',
  config: { ...stall.config, jittered: false },
};
