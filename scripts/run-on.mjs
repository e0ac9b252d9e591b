// Runs a command on another Node line and/or another server binary
// (docs/compatibility.md, "Servers and Node lines under test"):
//
//   node scripts/run-on.mjs [--node=22|22.12.0] [--server=redis-8.0|valkey-8.1|system|<path>] -- <command...>
//
// --node puts that Node's bin directory first in PATH (fetched once by
// scripts/ensure-node.mjs), so `node`, and npm/npx scripts, run on it.
// --server sets REDLOCK_SERVER to the binary built once by
// scripts/ensure-servers.mjs (or to a path); `system` unsets it (redis-server
// on PATH). The command's exit code is this script's.
import { spawnSync } from 'node:child_process';
import { dirname } from 'node:path';
import { ensureNode } from './ensure-node.mjs';
import { ensureServer } from './ensure-servers.mjs';

const args = process.argv.slice(2);
const split = args.indexOf('--');
const command = split === -1 ? [] : args.slice(split + 1);
const options = Object.fromEntries(
  (split === -1 ? args : args.slice(0, split)).map((a) => {
    const m = /^--(node|server)=(.+)$/.exec(a);
    if (!m) usage(`unknown argument '${a}'`);
    return [m[1], m[2]];
  }),
);
if (command.length === 0) usage('no command after --');

function usage(why) {
  console.error(
    `run-on: ${why}\nusage: node scripts/run-on.mjs [--node=22] [--server=redis-8.0|valkey-8.1|system|<path>] -- <command...>`,
  );
  process.exit(2);
}

const env = { ...process.env };
try {
  if (options.node) {
    const node = ensureNode(options.node);
    env.PATH = `${dirname(node)}:${env.PATH ?? ''}`;
    console.error(`run-on: node ${node}`);
  }
  if (options.server === 'system') delete env.REDLOCK_SERVER;
  else if (options.server)
    env.REDLOCK_SERVER = options.server.includes('/')
      ? options.server
      : ensureServer(options.server);
  if (options.server)
    console.error(
      `run-on: server ${env.REDLOCK_SERVER ?? 'redis-server on PATH'}`,
    );
} catch (error) {
  console.error(`run-on: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}

const run = spawnSync(command[0], command.slice(1), { stdio: 'inherit', env });
if (run.error) {
  console.error(`run-on: ${command[0]}: ${run.error.message}`);
  process.exit(127);
}
process.exit(run.status ?? 1);
