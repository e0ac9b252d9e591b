import { RedlockModule } from 'nestjs-redlock';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeAll, inspect, quorumUrls } from '../utils/nodes.js';
import { describeLockContract } from './lock-contract.js';

// The contract on the real library: five Redis nodes, real time.
const admin = inspect(quorumUrls());
afterAll(() => closeAll(admin));

describeLockContract('Redlock on five Redis nodes', {
  lockModule: (keyPrefix) =>
    RedlockModule.forRoot({
      clients: quorumUrls(),
      keyPrefix,
      logger: { warn: () => undefined },
    }),
  advance: (ms) => sleep(ms),
  async lose(_app, lock) {
    // The keys vanish from every node (a flush, a failover), and the next
    // extension finds them gone.
    for (const client of admin)
      for (const key of lock.keys)
        if ((await client.get(key)) === lock.value) await client.del(key);
    await lock.extend().catch(() => undefined);
  },
});
