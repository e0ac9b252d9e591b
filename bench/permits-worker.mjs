// A client process of bench/semaphore.mjs and bench/rwlock.mjs: long-lived
// (forked once per bench run), it creates one library instance per run
// (`setup`), runs groups of loops on the parent's signal (`go`) and sends
// back every hold as an interval on CLOCK_MONOTONIC (process.hrtime, the
// same clock in every process of the machine), so the parent can count
// how many holders overlapped across processes exactly, with no checker
// round trip in the critical section. A loop: acquire, hold `holdMs`,
// release, pause `pauseMs` (0: none), again, until `endAt`.
import { createPermitLib } from './permits-libs.mjs';
import { countCommands, sent, sleep } from './util.mjs';

countCommands();
/** µs on CLOCK_MONOTONIC, comparable across processes. */
const hr = () => Number(process.hrtime.bigint()) / 1000;
let lib;

/**
 * One loop of `role` on `key`. Records [granted, leaving] of every hold
 * (the acquire resolved; the release not yet asked), the wait of every
 * grant, and the acquires that gave up.
 */
async function loop(role, key, holdMs, pauseMs, endAt, out) {
  while (hr() < endAt) {
    const t0 = hr();
    let handle;
    try {
      handle = await lib.acquire(key, role);
    } catch (error) {
      out.gaveUps++;
      out.lastError ??= String(error?.message ?? error);
      continue;
    }
    const t1 = hr();
    if (holdMs > 0) await sleep(holdMs);
    out.intervals.push(t1, hr());
    out.waits.push((t1 - t0) / 1000);
    await lib.release(handle);
    if (pauseMs > 0) await sleep(pauseMs);
  }
}

process.on('message', async (msg) => {
  try {
    if (msg.cmd === 'setup') {
      lib = await createPermitLib(msg.lib, msg.urls, msg.opts);
      process.send({ ok: 'setup' });
    } else if (msg.cmd === 'go') {
      const outs = msg.groups.map(() => ({ intervals: [], waits: [], gaveUps: 0 }));
      const wait = (msg.startAt - hr()) / 1000;
      if (wait > 0) await sleep(wait);
      const stats0 = lib.stats();
      const commands0 = sent.commands;
      const cpu0 = process.cpuUsage();
      await Promise.all(
        msg.groups.flatMap((g, i) =>
          Array.from({ length: g.loops }, (_, w) => loop(g.role, g.distinct ? `${g.key}:${w}` : g.key, g.holdMs, g.pauseMs ?? 0, msg.endAt, outs[i])),
        ),
      );
      const cpu = process.cpuUsage(cpu0);
      const finishedAt = hr();
      const stats1 = lib.stats();
      const commands = sent.commands - commands0;
      await lib.close();
      lib = undefined;
      process.send({
        ok: 'go',
        groups: outs.map((o) => ({ ...o, intervals: Float64Array.from(o.intervals), waits: Float64Array.from(o.waits) })),
        cpuUs: cpu.user + cpu.system,
        commands,
        finishedAt,
        stats: Object.fromEntries(Object.keys(stats1).map((k) => [k, stats1[k] - (stats0[k] ?? 0)])),
      });
    } else if (msg.cmd === 'exit') {
      await lib?.close();
      process.exit(0);
    }
  } catch (error) {
    process.send({ error: String(error?.stack ?? error) });
  }
});
// The parent gone closes the IPC channel: nothing will ever ask this worker to exit.
process.on('disconnect', () => process.exit(0));
process.send({ ok: 'ready' });
