// TurboFan compile time per cold child and phase, and per function, from
// the log of `cpu.mjs --cold --child-flags='--trace-opt --trace-deopt'
// --child-log=<file>`: in a fresh process the gap to node-redlock is mostly
// the optimizing compiler's work on the hot path (docs/performance.md).
// Usage: node bench/profile/jit.mjs <log> [<child name prefix, e.g. core:head>]
//   (with a prefix: that child's functions by compile ms, after setup)
import { readFileSync } from 'node:fs';

const per = new Map();
const fns = new Map();
let child = '';
let phase = 'setup';
for (const line of readFileSync(process.argv[2], 'utf8').split('\n')) {
  if (line.startsWith('## ')) {
    child = line.slice(3);
    phase = 'setup';
    continue;
  }
  if (line.startsWith('@@phase ')) {
    phase = line.split(' ')[1];
    continue;
  }
  const key = `${child} | ${phase}`;
  const e = per.get(key) ?? { n: 0, ms: 0, deopts: 0 };
  per.set(key, e);
  const m = line.match(/completed compiling .*<JSFunction (\S*) .*took ([\d.]+), ([\d.]+), ([\d.]+) ms/);
  if (m) {
    const ms = Number(m[2]) + Number(m[3]) + Number(m[4]);
    e.n++;
    e.ms += ms;
    if (process.argv[3] && child.startsWith(process.argv[3]) && phase !== 'setup') fns.set(m[1], (fns.get(m[1]) ?? 0) + ms);
  }
  if (line.startsWith('[bailout')) e.deopts++;
}
for (const [key, e] of per) console.log(`${key.padEnd(40)} compiles ${String(e.n).padStart(4)}  ${e.ms.toFixed(1).padStart(7)} ms  deopts ${e.deopts}`);
for (const [f, ms] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`${ms.toFixed(2).padStart(8)} ms  ${f}`);
