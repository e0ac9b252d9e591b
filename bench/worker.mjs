// A contended worker in its own process (scenario 3b): it has its own
// library instance and connections, runs hotWorker on the parent's signal
// and reports back. Mutual exclusion is checked in a separate Redis (INCR
// on entry must return 1).
import { createLib } from './libs.mjs';
import { hotWorker } from './scenarios.mjs';
import { countCommands, internalClient, sent } from './util.mjs';

countCommands();
let lib;
let checker;

process.on('message', async (msg) => {
  try {
    if (msg.cmd === 'setup') {
      lib = await createLib(msg.lib, msg.urls, msg.opts);
      checker ??= internalClient(msg.checkerUrl);
      process.send({ ok: 'setup' });
    } else if (msg.cmd === 'go') {
      const counter = `inside:${msg.key}`;
      const commands0 = sent.commands;
      const result = await hotWorker(lib, {
        key: msg.key,
        endAt: msg.endAt,
        enter: async () => (await checker.incr(counter)) === 1,
        exit: async () => {
          await checker.decr(counter);
        },
      });
      const finishedAt = Date.now();
      await lib.close();
      lib = undefined;
      process.send({ ok: 'go', result, finishedAt, commands: sent.commands - commands0 });
    } else if (msg.cmd === 'exit') {
      await checker?.quit();
      process.exit(0);
    }
  } catch (error) {
    process.send({ error: String(error?.stack ?? error) });
  }
});
// The parent gone (killed, or its output pipe closed) closes the IPC
// channel: nothing will ever ask this worker to exit.
process.on('disconnect', () => process.exit(0));
process.send({ ok: 'ready' });
