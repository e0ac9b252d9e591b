// The checker: reads the whole history of a scenario and counts what breaks
// a promise of the library. Safety violations:
// - overlap: two holders of one resource (different lock values) whose held
//   intervals [grant, release] overlap while both still had validity left
//   (validity ends at the lock's reported deadline, or when its signal
//   aborted), by more than the two clients' clock bounds;
// - lost: a lost update in the register (a write whose read value was no
//   longer the register's value when the write landed);
// - staleAccepted: the fenced store accepted a write with a token lower than
//   one it had accepted before (or an equal token from another holder);
// - tokens: a grant got a token not greater than that of a grant that had
//   completed before its acquire started;
// - abort: a lock read as held after its signal aborted.
// Semaphores (cfg.workload 'semaphore', cfg.permits = n):
// - excess: more than n holders of one resource at one instant, each
//   within its validity: every holder's [grant, end of validity] is first
//   shrunk by its client's clock bound (and 0.5 ms) at both ends, so that
//   what is left lies within the true interval whatever the offsets' error;
//   a grant that makes more than n of those overlap counts once. For a
//   library semaphore, each permit slot is also a mutex: overlap, lost and
//   tokens are checked per slot as for a mutex.
// Read/write locks (cfg.workload 'rw'):
// - overlap: a writer and another holder (reader or writer) of one
//   resource, as for a mutex; two readers may overlap (info.maxReaders:
//   the most readers within validity at once);
// - torn: a reader whose two reads of the register (after its grant, then
//   after its work, within validity) differ: a write landed in between.
// Liveness failures: an acquire call that lasted past waitTimeout + slack,
// a client that did not stop when told (hung), plus a scenario's own
// bounds (checks()). Informational: overlaps of held intervals beyond
// validity (a holder that kept going after its lease: the documented limit
// that fencing answers), stale writes the store rejected.

/** Slack on an acquire call beyond its waitTimeout: the last attempt and its take-back (ttl each), plus 1 s of a loaded machine. */
export const acquireSlack = (cfg) => 2 * cfg.ttl + 1000;

export function check({ cfg, ops, offsets, lostUpdates, torn = [], storeLogs, kills, hung, notes, checks }) {
  const eps = (c) => {
    const rtt = offsets[c]?.rtt;
    return Number.isFinite(rtt) ? rtt / 2 : 5;
  };
  const off = (c) => offsets[c]?.offset ?? 0;
  const killedAt = new Map(kills.map((k) => [k.client, k.t]));
  // Times on the checker's clock.
  const all = ops.map((o) => {
    const d = off(o.c);
    const fix = (t) => (t === undefined ? undefined : t - d);
    const op = {
      ...o,
      start: fix(o.start),
      grant: fix(o.grant),
      release: fix(o.release),
      end: fix(o.end),
      deadline: fix(o.deadline),
      lostAt: fix(o.lostAt),
      eps: eps(o.c),
    };
    if (op.grant !== undefined) {
      const killed = !o.finished && killedAt.has(o.c);
      op.heldEnd = op.release ?? (killed ? killedAt.get(o.c) : op.deadline);
      op.validEnd = Math.min(op.heldEnd, op.deadline, op.lostAt ?? Infinity);
    }
    return op;
  });
  const granted = all.filter((o) => o.grant !== undefined);
  const v = { overlap: 0, lost: lostUpdates.length, staleAccepted: 0, tokens: 0, abort: 0 };
  const info = { staleOverlap: 0, maxOverlapMs: 0, rejected: 0, examples: [] };
  const liveness = { slow: 0, hung: hung.length };
  const workload = cfg.workload ?? 'mutex';

  if (workload === 'semaphore') {
    // The bound, per resource, whatever the semaphore is made of.
    v.excess = 0;
    info.permits = cfg.permits;
    info.maxHolders = 0;
    info.maxHeld = 0;
    for (const list of groupBy(granted, (o) => o.r).values()) {
      const valid = concurrent(list, (o) => o.validEnd, cfg.permits);
      v.excess += valid.excess;
      info.maxHolders = Math.max(info.maxHolders, valid.max);
      for (const e of valid.examples) if (info.examples.length < 3) info.examples.push(e);
      // Held, validity or not (a paused holder past its lease): information.
      info.maxHeld = Math.max(info.maxHeld, concurrent(list, (o) => o.heldEnd, cfg.permits).max);
    }
  }
  if (workload === 'rw') {
    v.torn = torn.length;
    info.maxReaders = 0;
    info.reads = granted.filter((o) => o.mode === 'read').length;
    info.writes = granted.length - info.reads;
    for (const list of groupBy(granted, (o) => o.r).values()) {
      const readers = list.filter((o) => o.mode === 'read');
      info.maxReaders = Math.max(info.maxReaders, concurrent(readers, (o) => o.validEnd, Infinity).max);
    }
  }

  // Mutual exclusion, pair by pair: per resource (a mutex, a read/write
  // lock), per permit slot (a library semaphore; a semaphore without slots
  // has none to check).
  const exclusive = (o) => (workload === 'semaphore' ? o.slot : o.r);
  const byResource = groupBy(
    granted.filter((o) => exclusive(o) !== undefined),
    exclusive,
  );
  for (const list of byResource.values()) {
    list.sort((a, b) => a.grant - b.grant);
    // Sweep: ops whose held interval may still reach the current grant.
    let active = [];
    for (const b of list) {
      active = active.filter((a) => a.heldEnd > b.grant - 50);
      for (const a of active) {
        if (a.h === b.h) continue; // one lock handed on inside a process
        if (a.mode === 'read' && b.mode === 'read') continue; // readers share
        const bound = a.eps + b.eps + 1;
        const held = Math.min(a.heldEnd, b.heldEnd) - b.grant;
        if (held <= bound) continue;
        const valid = Math.min(a.validEnd, b.validEnd) - b.grant;
        if (valid > bound) {
          v.overlap++;
          info.maxOverlapMs = Math.max(info.maxOverlapMs, valid);
          if (info.examples.length < 3) info.examples.push({ overlapMs: +valid.toFixed(1), a: brief(a), b: brief(b) });
        } else info.staleOverlap++;
      }
      active.push(b);
    }
    if (cfg.fenced) v.tokens += tokenRegressions(list);
  }
  for (const o of all) {
    v.abort += o.heldAfterAbort ?? 0;
    info.rejected += o.rejected ?? 0;
    const took = (o.grant ?? o.end) - o.start;
    if (Number.isFinite(took) && took > cfg.waitTimeout + acquireSlack(cfg)) liveness.slow++;
  }
  if (storeLogs) {
    for (const entries of Object.values(storeLogs)) {
      let prev;
      for (const line of entries) {
        const [tok, h, from] = line.split(' ');
        const e = { tok: BigInt(tok), h, from: Number(from) };
        if (prev) {
          if (e.tok < prev.tok || (e.tok === prev.tok && e.h !== prev.h)) v.staleAccepted++;
          if (e.from !== prev.from + 1) v.lost++;
        } else if (e.from !== 0) v.lost++;
        prev = e;
      }
    }
  }
  const extra = checks?.({ cfg, ops: all, kills }) ?? {};
  Object.assign(liveness, extra.liveness ?? {});
  Object.assign(info, extra.info ?? {});
  return {
    ops: all.filter((o) => o.finished).length,
    grants: granted.length,
    outcomes: countBy(
      all.filter((o) => o.finished),
      (o) => o.outcome,
    ),
    violations: v,
    liveness,
    info,
    faults: notes.faults,
    faultKinds: notes.kinds,
    errors: notes.errors,
  };
}

/** Grants whose token is not above every token granted before their acquire started. */
function tokenRegressions(list) {
  let bad = 0;
  const sorted = [...list].sort((a, b) => a.start - b.start);
  const byGrant = [...list].sort((a, b) => a.grant - b.grant);
  let i = 0;
  let max = -1n;
  for (const b of sorted) {
    while (i < byGrant.length && byGrant[i].grant + byGrant[i].eps + b.eps < b.start) {
      const t = BigInt(byGrant[i].tok ?? -1);
      if (t > max) max = t;
      i++;
    }
    if (b.tok !== undefined && BigInt(b.tok) <= max) bad++;
  }
  return bad;
}

const brief = (o) => {
  const t = (x) => (x === undefined ? undefined : Math.round((x - o.start) * 10) / 10);
  return {
    c: o.c,
    w: o.w,
    h: o.h,
    start: +o.start.toFixed(1),
    grant: t(o.grant),
    firstDeadline: t(o.firstDeadline),
    deadline: t(o.deadline),
    lostAt: t(o.lostAt),
    release: t(o.release),
    exts: o.extLog?.map((e) => e.map(t)),
    extFail: o.extFail,
  };
};

function groupBy(xs, f) {
  const m = new Map();
  for (const x of xs) {
    const k = f(x);
    if (!m.has(k)) m.set(k, []);
    m.get(k).push(x);
  }
  return m;
}

/**
 * The most holders of one resource at one instant, each over [grant,
 * end(op)] shrunk by its clock bound (and 0.5 ms) at both ends (ops of one
 * lock value count once), and how many grants took it above `limit`.
 */
function concurrent(list, end, limit) {
  const events = [];
  for (const o of list) {
    const from = o.grant + o.eps + 0.5;
    const to = end(o) - o.eps - 0.5;
    if (to > from) events.push([from, 1, o], [to, -1, o]);
  }
  // Ends before starts at one instant: touching intervals do not overlap.
  events.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const active = new Map(); // lock value -> [ops]
  let max = 0;
  let excess = 0;
  const examples = [];
  for (const [t, d, o] of events) {
    if (d < 0) {
      const ops = active.get(o.h);
      ops.splice(ops.indexOf(o), 1);
      if (ops.length === 0) active.delete(o.h);
      continue;
    }
    if (!active.has(o.h)) active.set(o.h, []);
    active.get(o.h).push(o);
    max = Math.max(max, active.size);
    if (active.size > limit) {
      excess++;
      if (examples.length < 3)
        examples.push({
          holders: active.size,
          at: +t.toFixed(1),
          ops: [...active.values()].map((x) => ({ ...brief(x[0]), r: x[0].r, slot: x[0].slot })),
        });
    }
  }
  return { max, excess, examples };
}

function countBy(xs, f) {
  const m = {};
  for (const x of xs) m[f(x)] = (m[f(x)] ?? 0) + 1;
  return m;
}
