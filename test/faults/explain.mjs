// Prints the overlapping pairs of a history kept with FAULTS_DUMP, with the
// faults around them (times in ms from the first holder's grant):
//   node test/faults/explain.mjs /tmp/dump/<scenario>-<time>.json
import { readFileSync } from 'node:fs';
import { check } from './checker.mjs';

const d = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const report = check({
  ...d,
  storeLogs: undefined,
  hung: [],
  notes: { faults: 0, kinds: {}, errors: [] },
  kills: d.kills ?? [],
});
console.log(JSON.stringify(report.violations), `${report.ops} ops`);
for (const ex of report.info.examples) {
  // A semaphore's excess: the holders valid at that instant.
  const t0 = ex.a ? ex.a.start + ex.a.grant : ex.at;
  console.log(JSON.stringify(ex));
  const near = (d.faults ?? [])
    .filter(([t]) => t > t0 - 2000 && t < t0 + 2000)
    .map(([t, k, x]) => [Math.round(t - t0), k, x]);
  console.log('  faults near:', JSON.stringify(near));
}
