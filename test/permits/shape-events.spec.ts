import { afterAll, describe, expect, it } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  Redlock,
  REDLOCK_CHANNELS,
  type AttemptMessage,
  type WaitMessage,
} from 'nestjs-redlock';
import { quorumUrls, uniquePrefix } from '../utils/nodes.js';

// The `attempt` and `wait` channels hear semaphore and read/write acquires
// as they hear a mutex's, with the shape asked for.
describe('attempt and wait events of semaphores and read/write locks', () => {
  const keyPrefix = uniquePrefix('shape-ev');
  const redlocks: Redlock[] = [];
  const make = () => {
    const r = new Redlock({ clients: quorumUrls(), keyPrefix });
    redlocks.push(r);
    return r;
  };
  afterAll(() => Promise.all(redlocks.map((r) => r.quit())));

  const heard = async (
    resource: string,
    run: () => Promise<unknown>,
  ): Promise<{ attempts: AttemptMessage[]; waits: WaitMessage[] }> => {
    const attempts: AttemptMessage[] = [];
    const waits: WaitMessage[] = [];
    const onAttempt = (m: unknown) => {
      if ((m as AttemptMessage).resources.includes(resource))
        attempts.push(m as AttemptMessage);
    };
    const onWait = (m: unknown) => {
      if ((m as WaitMessage).resources.includes(resource))
        waits.push(m as WaitMessage);
    };
    subscribe(REDLOCK_CHANNELS.attempt, onAttempt);
    subscribe(REDLOCK_CHANNELS.wait, onWait);
    try {
      await run();
    } finally {
      unsubscribe(REDLOCK_CHANNELS.attempt, onAttempt);
      unsubscribe(REDLOCK_CHANNELS.wait, onWait);
    }
    return { attempts, waits };
  };

  it('tells each attempt and wait of a full semaphore, with its permits', async () => {
    const held = await make().acquire('psp', { permits: 1 });
    const { attempts, waits } = await heard('psp', () =>
      make()
        .acquire('psp', {
          permits: 1,
          waitTimeout: 200,
          retryDelay: 20,
          retryJitter: 0,
        })
        .catch(() => undefined),
    );
    await held.release();
    expect(attempts.length).toBeGreaterThan(1);
    for (const a of attempts) {
      expect(a).toMatchObject({ permits: 1, granted: false });
      expect(a.mode).toBeUndefined();
      expect(a.nodes).toHaveLength(quorumUrls().length);
      expect(a.latenciesMs.some((l) => l !== undefined)).toBe(true);
    }
    expect(waits.length).toBeGreaterThan(0);
    expect(waits[0]).toMatchObject({ permits: 1, attempt: 1 });
  });

  it('tells a read/write attempt and wait, with its mode', async () => {
    const held = await make().acquire('catalogue', { mode: 'write' });
    const { attempts, waits } = await heard('catalogue', () =>
      make()
        .acquire('catalogue', { mode: 'read', waitTimeout: 100 })
        .catch(() => undefined),
    );
    await held.release();
    expect(attempts[0]).toMatchObject({ mode: 'read', granted: false });
    expect(waits[0]).toMatchObject({ mode: 'read', attempt: 1 });
    const granted = await heard('catalogue', async () => {
      const lock = await make().acquire('catalogue', { mode: 'write' });
      await lock.release();
    });
    expect(granted.attempts).toEqual([
      expect.objectContaining({ mode: 'write', granted: true }),
    ]);
  });
});
