// Self time by function of a .cpuprofile (node --cpu-prof), and by origin
// (this library's dist, ioredis, node-redlock, Node's internals, GC, ...).
// Usage: node bench/profile/top.mjs <file.cpuprofile> [--top=40]
//   [--from=µs --to=µs] (a window in the profile's clock, e.g. the
//   `@@phase` marks cpu.mjs's cold children print) [--grep=text] (only
//   functions whose location contains text)
import { readFileSync } from 'node:fs';

const [file, ...rest] = process.argv.slice(2);
const opt = Object.fromEntries(rest.map((a) => a.replace(/^--/, '').split('=')));
const top = Number(opt.top ?? 40);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const from = opt.from ? Number(opt.from) : -Infinity;
const to = opt.to ? Number(opt.to) : Infinity;

const origin = (url) => {
  if (!url) return 'native/other';
  if (url.includes('/dist/esm/') || url.includes('/.scratch/profile/')) return 'nestjs-redlock';
  const m = url.match(/node_modules\/((@[^/]+\/)?[^/]+)/);
  if (m) return m[1];
  if (url.startsWith('node:')) return 'node internals';
  return url.replace(/^file:\/\//, '');
};

const self = new Map();
const origins = new Map();
let total = 0;
let t = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i];
  t += dt;
  if (t < from || t > to) continue;
  const node = byId.get(profile.samples[i]);
  const { functionName, url, lineNumber } = node.callFrame;
  const where = `${functionName || '(anonymous)'} ${url ? url.replace(/^.*\/(node_modules\/)?/, '') + ':' + (lineNumber + 1) : ''}`;
  if (opt.grep && !where.includes(opt.grep)) continue;
  total += dt;
  self.set(where, (self.get(where) ?? 0) + dt);
  const o = ['(garbage collector)', '(program)', '(idle)'].includes(functionName) ? functionName : origin(url);
  origins.set(o, (origins.get(o) ?? 0) + dt);
}
const pct = (v) => ((100 * v) / total).toFixed(1).padStart(5);
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled${opt.from || opt.to ? ' in the window' : ''}`);
console.log('\nby origin:');
for (const [o, v] of [...origins].sort((a, b) => b[1] - a[1])) console.log(`${pct(v)} %  ${(v / 1000).toFixed(1).padStart(8)} ms  ${o}`);
console.log(`\ntop ${top} functions by self time:`);
for (const [w, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)} %  ${(v / 1000).toFixed(1).padStart(8)} ms  ${w}`);
