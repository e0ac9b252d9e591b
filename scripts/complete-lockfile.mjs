// npm leaves a native package's optional per-platform builds out of
// package-lock.json when the registry it installs from does not serve them
// (this workplace's mirror serves only the linux-x64 build of
// unrs-resolver, which jest 30 uses). `npm ci` then refuses the lock file as
// "Missing: @unrs/resolver-binding-…". This adds those entries back, with the
// os/cpu/libc npm needs to skip them on other platforms. Run it after
// `npm install` changes the lock file.
import { readFileSync, writeFileSync } from 'node:fs';

const file = 'package-lock.json';
const lock = JSON.parse(readFileSync(file, 'utf8'));
const parent = lock.packages['node_modules/unrs-resolver'];
let added = 0;
for (const [name, version] of Object.entries(
  parent?.optionalDependencies ?? {},
)) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  const [os, cpu, abi] = name.replace('@unrs/resolver-binding-', '').split('-');
  const entry = {
    version,
    dev: true,
    license: 'MIT',
    optional: true,
    os: [os],
    cpu: [cpu],
  };
  if (os === 'wasm32') Object.assign(entry, { os: undefined, cpu: ['wasm32'] });
  if (abi?.startsWith('musl')) entry.libc = ['musl'];
  else if (abi?.startsWith('gnu')) entry.libc = ['glibc'];
  lock.packages[key] = JSON.parse(JSON.stringify(entry));
  added++;
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) =>
    a === '' ? -1 : b === '' ? 1 : a.localeCompare(b),
  ),
);
writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`complete-lockfile: added ${added} optional platform entries`);
