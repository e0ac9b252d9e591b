// npm run test:faults: the Jepsen-style fault harness (docs/faults.md).
//   node test/faults/run.mjs [--ci | --full] [--only=name,name] [--no-mutants]
//     [--ops=N] [--max-ms=N] [--set=field=json ...] [--dist=DIR]
// --retry: a scenario that failed without a violation it forbids runs once
// more (CI; see judge). --ci (the default): every scenario and mutant, bounded (CI_OPS operations
// each, at most CI_MAX_MS), a few minutes in all, except scenarios marked
// `ci: false` (run by --full, or when --only names them). --full: FULL_OPS
// operations per scenario (at most FULL_MAX_MS, or the scenario's own
// fullMaxMs). A scenario file may export a list of scenarios. Prints one table; exits non-zero on any
// unexpected verdict (a violation where none is allowed, a documented
// hazard not found, a liveness failure, a mutant that survives).
// --dist=DIR: the build under test (an ESM build's folder, as dist/esm;
// default dist/esm of this checkout).
import { readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RedisServer, startServers } from '../../scripts/redis-nodes.mjs';
import { resetServers, runScenario, sleep } from './harness.mjs';
import { MUTANTS, buildMutant, copyDist } from './mutants.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '../..');
const SCRATCH = join(HERE, '.scratch');
const CI_OPS = 1000;
const CI_MAX_MS = 15_000;
const FULL_OPS = 10_000;
const FULL_MAX_MS = 180_000;

const args = process.argv.slice(2);
const full = args.includes('--full');
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const opsArg = Number(args.find((a) => a.startsWith('--ops='))?.slice(6)) || undefined;
const maxMsArg = Number(args.find((a) => a.startsWith('--max-ms='))?.slice(9)) || undefined;
const withMutants = !args.includes('--no-mutants');
// --retry (CI): a scenario that failed only on timing runs once more (see judge).
const retry = args.includes('--retry');
const distEsm = args.find((a) => a.startsWith('--dist='))?.slice(7) ?? join(ROOT, 'dist/esm');
// --set=key=json overrides a config field of every selected scenario (to bisect a finding).
const overrides = Object.fromEntries(
  args
    .filter((a) => a.startsWith('--set='))
    .map((a) => {
      const [k, ...v] = a.slice(6).split('=');
      return [k, JSON.parse(v.join('='))];
    }),
);
const selected = (name) => !only || only.includes(name);
// Scenarios of this run: --only's, or every one (in the bounded run, those not marked ci: false).
const inRun = (s) => (only ? only.includes(s.name) : full || s.ci !== false);

const scenarioFiles = readdirSync(join(HERE, 'scenarios'))
  .filter((f) => /^\d.*\.mjs$/.test(f))
  .sort();
const scenarios = [];
for (const f of scenarioFiles)
  scenarios.push(...[(await import(pathToFileURL(join(HERE, 'scenarios', f)))).default].flat());
const byName = new Map(scenarios.map((s) => [s.name, s]));
for (const m of MUTANTS) if (!byName.has(m.scenario)) throw new Error(`mutant ${m.name}: no scenario ${m.scenario}`);

// The library under test, and its mutants, copied out of dist/ first: a
// rebuild of dist/ during the run changes nothing here.
mkdirSync(SCRATCH, { recursive: true });
const original = copyDist(distEsm, join(SCRATCH, 'original'));
const mutants = withMutants
  ? MUTANTS.filter((m) => selected(m.name)).map((m) => ({
      ...m,
      dist: buildMutant(m, distEsm, join(SCRATCH, m.name)),
    }))
  : [];

const servers = await startServers(5);
const store = await RedisServer.start();
const rows = [];
const started = Date.now();
let stopped = false;
const stopAll = async () => {
  if (stopped) return;
  stopped = true;
  await Promise.all([...servers, store].map((s) => s.stop().catch(() => undefined)));
};
process.on('SIGINT', () => void stopAll().then(() => process.exit(130)));

const sum = (o, keys = Object.keys(o)) => keys.reduce((a, k) => a + (o[k] ?? 0), 0);
const showViolations = (v) => {
  const parts = Object.entries(v).filter(([, n]) => n > 0);
  return parts.length ? `${sum(v)} (${parts.map(([k, n]) => `${k} ${n}`).join(', ')})` : '0';
};

/**
 * A run's verdict. `timingOnly`: it failed without a violation its
 * scenario forbids (a liveness bound, a scenario's own requirement, an
 * error, or a documented hazard the faults happened not to bring about),
 * what a loaded machine can cause; --retry runs such a row once more.
 */
function judge(scenario, report, mutant) {
  const v = report.violations;
  const liveness = sum(report.liveness);
  let verdict;
  let expected;
  let forbidden = 0;
  if (mutant) {
    expected = 'found';
    verdict = sum(v) > 0 ? 'caught' : 'SURVIVED';
  } else if (scenario.expected === 'report') {
    // A report on another library (the peer's semaphore): what it did,
    // whatever it found; only a run that did not work fails.
    expected = 'none (a report)';
    verdict = report.ops > 0 && report.errors.length === 0 ? 'reported' : 'FAIL';
  } else if (scenario.expected === 0) {
    expected = '0';
    const why = scenario.require?.(report);
    forbidden = sum(v);
    verdict = forbidden === 0 && liveness === 0 && report.errors.length === 0 && !why ? 'pass' : 'FAIL';
    if (why) report.requireFailed = why;
  } else {
    // A documented hazard: its kind must be found; the kinds it may bring
    // along (a second holder's lost updates) are allowed; any other is not.
    expected = `found (${scenario.expected.join(', ')})`;
    const allowed = [...scenario.expected, ...(scenario.allowed ?? [])];
    const other = Object.keys(v).filter((k) => !allowed.includes(k));
    forbidden = sum(v, other);
    verdict =
      sum(v, scenario.expected) > 0 && forbidden === 0 && liveness === 0 && report.errors.length === 0
        ? 'pass'
        : 'FAIL';
  }
  if (!mutant && liveness) verdict += ` (liveness: ${JSON.stringify(report.liveness)})`;
  const ok = /^(pass|caught|reported)$/.test(verdict);
  return { ok, expected, verdict, timingOnly: !ok && !mutant && forbidden === 0 };
}

/** Runs of a mutant's scenario before it counts as survived (see runOn). */
const MUTANT_TRIES = 3;

async function runOne(label, scenario0, dist, mutant) {
  // A scenario may bring nodes of its own (setup(): { servers, stop } or
  // { skip: reason }), e.g. in network namespaces.
  const own = await scenario0.setup?.();
  if (own?.skip) {
    console.log(`${label}: skipped (${own.skip})`);
    rows.push({ label, ops: 0, grants: 0, faults: 0, violations: '-', expected: '-', verdict: 'skipped' });
    return;
  }
  try {
    await runOn(label, scenario0, dist, mutant, own?.servers ?? servers);
  } finally {
    await own?.stop();
  }
}

async function runOn(label, scenario0, dist, mutant, servers) {
  const scenario = { ...scenario0, config: { ...scenario0.config, ...overrides } };
  const ops = opsArg ?? (full && !mutant ? FULL_OPS : (mutant?.ops ?? CI_OPS));
  const t0 = Date.now();
  // A mutant's bug shows by chance (a reply late enough, at the right
  // moment): a run that did not show it is tried again, up to MUTANT_TRIES
  // runs, stopping at the first that does. A scenario runs once, or with
  // --retry twice when its first run failed without a forbidden violation
  // (see timingOnly).
  let report;
  let judged;
  let first;
  let tries = 0;
  for (;;) {
    tries++;
    await resetServers(servers);
    await resetServers([store]);
    // Nodes restarted by an earlier scenario are young: a quarantine scenario
    // starts once every node is older than its quarantine.
    const quarantine = scenario.config?.restartQuarantine ?? 0;
    // The library takes 1 s off a node's reported uptime (whole seconds,
    // rounded up by Redis): nodes count again up to 2 s after the quarantine.
    if (quarantine) await sleep(quarantine + 2100);
    report = await runScenario({
      scenario,
      ops,
      maxMs: maxMsArg ?? (full && !mutant ? (scenario.fullMaxMs ?? FULL_MAX_MS) : (mutant?.maxMs ?? CI_MAX_MS)),
      servers,
      store,
      dist,
    });
    judged = judge(scenario, report, mutant);
    if (mutant) {
      if (judged.ok || tries >= MUTANT_TRIES) break;
    } else if (judged.ok || !retry || tries >= 2 || !judged.timingOnly) break;
    else {
      first = `${judged.verdict}: ${showViolations(report.violations)} violations, liveness ${JSON.stringify(report.liveness)}${report.requireFailed ? `, ${report.requireFailed}` : ''}${report.errors.length ? `, errors: ${report.errors.slice(0, 2).join('; ')}` : ''}`;
      console.log(`${label}: first run ${first}; once more (--retry)`);
    }
  }
  if (tries > 1) label += mutant ? ` (run ${tries} of at most ${MUTANT_TRIES})` : ' (run 2 of 2)';
  const { expected, verdict } = judged;
  const row = {
    label,
    ops: report.ops,
    grants: report.grants,
    faults: report.faults,
    violations: showViolations(report.violations),
    expected,
    verdict,
    first,
    seconds: Math.round((Date.now() - t0) / 1000),
    report,
  };
  rows.push(row);
  console.log(
    `${label}: ${row.ops} ops, ${row.grants} grants, ${row.faults} faults, violations ${row.violations}, expected ${expected}: ${verdict} (${row.seconds} s)`,
  );
  console.log(
    `  ${JSON.stringify({ outcomes: report.outcomes, faults: report.faultKinds, liveness: report.liveness, info: report.info })}`,
  );
  if (report.errors.length) console.log(`  errors (${report.errors.length}): ${report.errors.slice(0, 3).join('\n')}`);
}

try {
  for (const s of scenarios) if (inRun(s)) await runOne(s.title, s, original, false);
  for (const m of mutants) {
    // A mutant may also set config fields (one that swaps the semaphore).
    const s = byName.get(m.scenario);
    await runOne(
      `mutant ${m.name} (${s.title.replace(/^\d+\w? /, '')})`,
      m.config ? { ...s, config: { ...s.config, ...m.config } } : s,
      m.dist,
      m,
    );
  }
} finally {
  await stopAll();
}

const header = ['scenario', 'operations', 'grants', 'faults injected', 'violations found', 'expected', 'verdict'];
const table = [
  header,
  header.map(() => '---'),
  ...rows.map((r) => [r.label, r.ops, r.grants, r.faults, r.violations, r.expected, r.verdict]),
];
console.log(
  `\n${full ? 'full' : 'ci'} run, ${Math.round((Date.now() - started) / 1000)} s (${full ? FULL_OPS : CI_OPS} operations per scenario${full ? `, mutants ${CI_OPS}` : ''}${opsArg ? `, --ops=${opsArg}` : ''}):\n`,
);
for (const line of table) console.log(`| ${line.join(' | ')} |`);
writeFileSync(join(SCRATCH, `report-${full ? 'full' : 'ci'}.json`), JSON.stringify(rows, null, 1));
const retried = rows.filter((r) => r.first);
if (retried.length) console.log(`\nrun twice (--retry): ${retried.map((r) => `${r.label}: first run ${r.first}`).join('; ')}`);
const bad = rows.filter((r) => !/^(pass|caught|skipped|reported)$/.test(r.verdict));
if (bad.length) {
  console.log(`\n${bad.length} unexpected verdict(s): ${bad.map((r) => r.label).join('; ')}`);
  process.exitCode = 1;
}
