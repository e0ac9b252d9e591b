// npm run test:busy: the default test suite while every core is kept busy
// by other processes, as on a laptop with other work or a shared CI runner.
// Starts one CPU-bound process per core (each ends by itself after
// BUSY_MAX_MS, and is stopped by pid when the suite ends), runs `npm test`
// with the arguments given, and exits with its code.
//
//   node scripts/test-busy.mjs [jest arguments...]
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';

/** The longest the load may run, whatever happens to this script. */
const BUSY_MAX_MS = 30 * 60_000;

const burners = Array.from({ length: availableParallelism() }, () =>
  spawn(
    process.execPath,
    [
      '-e',
      // Spins in slices, so its own timer ends it even if nobody stops it.
      `const end = Date.now() + ${BUSY_MAX_MS};
       const spin = () => { const t = Date.now() + 50; while (Date.now() < t); if (Date.now() < end) setImmediate(spin); };
       spin();`,
    ],
    { stdio: 'ignore' },
  ),
);
const stop = () => {
  for (const burner of burners)
    if (burner.exitCode === null) burner.kill('SIGKILL');
};
process.on('exit', stop);
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => {
    stop();
    process.exit(130);
  });

console.log(
  `test:busy: ${burners.length} CPU-bound processes (pids ${burners.map((b) => b.pid).join(', ')}) keep every core busy`,
);
const tests = spawn('npm', ['test', '--', ...process.argv.slice(2)], {
  stdio: 'inherit',
});
tests.once('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 1 : 0));
});
