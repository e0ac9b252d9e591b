import { afterAll, describe, expect, it } from '@jest/globals';
import { Redlock } from 'nestjs-redlock';
import {
  closeAll,
  inspect,
  quorumUrls,
  startListening,
  TEST_PROTOCOL,
  uniquePrefix,
} from './nodes.js';

/**
 * REDLOCK_TEST_PROTOCOL=2|3 (scripts/redis-nodes.mjs) must reach every
 * connection a spec makes, the library's from URLs included, or a run said
 * to be on RESP2 would be on RESP3 (ioredis 6's default) for the most part.
 * The servers say which protocol each connection speaks (`resp=` of CLIENT
 * INFO and CLIENT LIST, Redis 7+ and Valkey).
 */
describe(`the test clients' protocol (REDLOCK_TEST_PROTOCOL=${process.env.REDLOCK_TEST_PROTOCOL ?? ''})`, () => {
  const expected = String(TEST_PROTOCOL ?? 3);
  const admin = inspect(quorumUrls().slice(0, 1));
  afterAll(() => closeAll(admin));

  const resp = (info: string) => /\bresp=(\d)/.exec(info)?.[1];

  it('the spec’s own clients and the library’s command connections speak it', async () => {
    expect(resp((await admin[0].call('CLIENT', 'INFO')) as string)).toBe(
      expected,
    );
    const redlock = new Redlock({ clients: quorumUrls() });
    try {
      await redlock.ready();
      for (const node of redlock.nodes)
        expect(resp((await node.client.call('CLIENT', 'INFO')) as string)).toBe(
          expected,
        );
    } finally {
      await redlock.quit();
    }
  });

  it('the library’s subscriber connections (a waiter’s) speak it too', async () => {
    const keyPrefix = uniquePrefix('protocol');
    const holder = new Redlock({ clients: quorumUrls(), keyPrefix });
    const waiter = new Redlock({ clients: quorumUrls(), keyPrefix });
    try {
      await startListening(holder, waiter);
      const list = (await admin[0].call('CLIENT', 'LIST')) as string;
      const subscribers = list
        .split('\n')
        .filter((line) => /\bsub=[1-9]|\bssub=[1-9]/.test(line));
      expect(subscribers.length).toBeGreaterThan(0);
      expect(new Set(subscribers.map(resp))).toEqual(new Set([expected]));
    } finally {
      await Promise.all([holder.quit(), waiter.quit()]);
    }
  });
});
