// Mutants: copies of the built library (dist/esm) with one known bug each,
// made in a scratch folder by exact string replacement. A pattern that is
// not found (a refactor moved the code) fails the run loudly, so a mutant
// can never silently be identical to the original. Each names the scenario
// whose faults give its bug a chance to show; the checker must then find at
// least one safety violation. A mutant may instead swap a part for one of
// test/faults's own, through config fields of its scenario (`config`, no
// patches): per-node-counting runs the semaphore workload on
// semaphores.mjs's PerNodeSemaphore instead of the library's permits.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const MUTANTS = [
  {
    name: 'no-nx',
    what: 'acquire takes the key whatever it holds (SET without NX)',
    scenario: 'contention',
    patches: [
      [
        'core/scripts/acquire.script.js',
        "redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])",
        "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])",
      ],
      ['core/scripts/acquire.script.js', 'if current and current ~= ARGV[1] then', 'if false then'],
    ],
  },
  {
    name: 'release-no-owner-check',
    what: 'release deletes the key whoever holds it',
    scenario: 'contention',
    patches: [
      [
        'core/scripts/release.script.js',
        "if redis.call('GET', KEYS[1]) == ARGV[1]\n      and (leave",
        'if true\n      and (leave',
      ],
      [
        'core/scripts/release.script.js',
        "if redis.call('GET', key) == ARGV[1] and (leave",
        "if redis.call('EXISTS', key) == 1 and (leave",
      ],
    ],
  },
  {
    name: 'no-validity-check',
    // Its bug shows a few times per 500 operations here: a longer run keeps it from slipping through.
    ops: 1200,
    maxMs: 30_000,
    what: 'a quorum counts however late it came; validity counted from the reply, not from the request',
    scenario: 'stall-long-sections',
    patches: [
      ['core/operations/attempt.js', 'if (granted < ctx.quorum || validity <= 0)', 'if (granted < ctx.quorum)'],
      [
        'core/operations/attempt.js',
        'deadline: start + timing.ttl - timing.drift,',
        'deadline: ctx.clock.now() + timing.ttl - timing.drift,',
      ],
    ],
  },
  {
    name: 'extend-recreates',
    // Its bug shows a few times per 500 operations here: a longer run keeps it from slipping through.
    ops: 1200,
    maxMs: 30_000,
    // With the lapse rule in place (an extension whose quorum came after
    // the lock's validity ran out loses the lock), re-creating alone is an
    // equivalent mutant: an extension that counts was answered while the
    // keys still stood on its quorum, so what it re-creates elsewhere only
    // blocks. The mutant drops that rule too, as the library before it.
    what: 'an extension re-creates a missing key unconditionally, and counts however late',
    scenario: 'stall-long-sections',
    patches: [
      ['core/operations/extend.js', 'const lapsed = now >= lock.deadline;', 'const lapsed = false;'],
      [
        'core/scripts/extend.script.js',
        "  if redis.call('GET', KEYS[i]) ~= ARGV[1] then\n    return 0\n  end",
        "  if redis.call('EXISTS', KEYS[i]) == 0 then redis.call('SET', KEYS[i], ARGV[1])\n  elseif redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end",
      ],
      [
        'core/scripts/extend-many.script.js',
        "    if redis.call('GET', KEYS[i]) ~= value then",
        "    if redis.call('EXISTS', KEYS[i]) == 0 then redis.call('SET', KEYS[i], value) end\n    if redis.call('GET', KEYS[i]) ~= value then",
      ],
    ],
  },
  {
    name: 'quorum-n-over-2',
    what: 'quorum of N/2 (2 of 5)',
    scenario: 'contention',
    patches: [
      [
        'core/config/resolve.js',
        'options.quorum ?? Math.floor(count / 2) + 1;',
        'options.quorum ?? Math.floor(count / 2);',
      ],
      ['core/config/resolve.js', 'quorum <= count / 2 ||', 'quorum < 1 ||'],
    ],
  },
  {
    name: 'per-node-counting',
    what: "a semaphore that caps each node's count of holders, not the quorum's (the peers' design)",
    // Without faults its excess holders are rare (0 to 83 in 3,000
    // operations); on a split network, every client holding through
    // another quorum, they are the rule.
    scenario: 'sem-split',
    config: { semaphore: 'per-node' },
    patches: [],
  },
  {
    name: 'rw-reader-ignores-writer',
    what: 'the read/write acquire script grants a reader while a writer holds the key',
    scenario: 'rw-contention',
    patches: [
      [
        'core/scripts/rw-lock.script.js',
        'if cur and cur ~= MARK and cur ~= value then',
        'if write and cur and cur ~= MARK and cur ~= value then',
      ],
    ],
  },
  {
    name: 'single-node-tokens',
    what: "fencing tokens from node 0's counter alone",
    scenario: 'rolling-restart-fenced',
    patches: [
      ['core/fencing/issue-tokens.js', 'for (const ballot of grants) {', 'for (const ballot of grants.slice(0, 1)) {'],
      ['core/fencing/issue-tokens.js', 'if (countGranted(ballots) >= ctx.quorum) {', 'if (true) {'],
    ],
  },
];

/** Copies dist/esm to `dir` (fresh), so that a rebuild of dist meanwhile changes nothing here. */
export function copyDist(distEsm, dir) {
  if (!existsSync(join(distEsm, 'core/index.js'))) throw new Error(`no build in ${distEsm}: run npm run build`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(distEsm, dir, { recursive: true });
  return dir;
}

/** Builds `mutant` in `dir` from `distEsm`; throws when a pattern is missing. */
export function buildMutant(mutant, distEsm, dir) {
  copyDist(distEsm, dir);
  for (const [file, from, to] of mutant.patches) {
    const path = join(dir, file);
    const text = readFileSync(path, 'utf8');
    const at = text.indexOf(from);
    if (at < 0) throw new Error(`mutant ${mutant.name}: pattern not found in ${file}: ${JSON.stringify(from)}`);
    if (text.indexOf(from, at + 1) >= 0) throw new Error(`mutant ${mutant.name}: pattern found twice in ${file}`);
    writeFileSync(path, text.slice(0, at) + to + text.slice(at + from.length));
  }
  return dir;
}
