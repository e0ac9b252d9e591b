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
// Liveness failures: an acquire call that lasted past waitTimeout + slack,
// a client that did not stop when told (hung), plus a scenario's own
// bounds (checks()). Informational: overlaps of held intervals beyond
// validity (a holder that kept going after its lease: the documented limit
// that fencing answers), stale writes the store rejected.

/** Slack on an acquire call beyond its waitTimeout: the last attempt and its take-back (ttl each), plus 1 s of a loaded machine. */
export const acquireSlack = (cfg) => 2 * cfg.ttl + 1000;

export function check({ cfg, ops, offsets, lostUpdates, storeLogs, kills, hung, notes, checks }) {
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

  const byResource = new Map();
  for (const o of granted) {
    if (!byResource.has(o.r)) byResource.set(o.r, []);
    byResource.get(o.r).push(o);
  }
  for (const list of byResource.values()) {
    list.sort((a, b) => a.grant - b.grant);
    // Sweep: ops whose held interval may still reach the current grant.
    let active = [];
    for (const b of list) {
      active = active.filter((a) => a.heldEnd > b.grant - 50);
      for (const a of active) {
        if (a.h === b.h) continue; // one lock handed on inside a process
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

function countBy(xs, f) {
  const m = {};
  for (const x of xs) m[f(x)] = (m[f(x)] ?? 0) + 1;
  return m;
}
