import { setTimeout as sleep } from 'node:timers/promises';
import { BadGatewayException, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../config/app-config.js';
import { RedisStore } from '../store/redis-store.js';
import { PSP_CONCURRENCY } from './psp-limit.js';

export { PSP_CONCURRENCY };

/** What the provider has seen, over every replica of the app. */
export interface PspStats {
  /** Calls made (accepted and refused). */
  calls: number;
  /** Calls refused because `PSP_CONCURRENCY` were already in flight. */
  refused: number;
  /** Calls in flight now. */
  inFlight: number;
  /** The most calls in flight at once, refused ones included (a refusal takes as long). */
  maxInFlight: number;
}

/** A charge the provider accepted. */
export interface Charge {
  orderId: string;
  amount: number;
  reference: string;
}

// Counts a call in and keeps the highest count; refuses it past the limit
// (KEYS: in flight, most at once, calls, refused; ARGV: the limit). One
// script, so the count is exact across replicas.
const ENTER = `
local n = redis.call('INCR', KEYS[1])
redis.call('INCR', KEYS[3])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
if n > tonumber(ARGV[1]) then
  redis.call('INCR', KEYS[4])
  return 0
end
return 1
`;

/**
 * A stand-in for a payment service provider (PSP) with a concurrency
 * limit per merchant account, as many have: at most `PSP_CONCURRENCY`
 * calls at once, the next refused (the app answers 502
 * `code: 'PSP_REFUSED'`). Each call takes `PSP_LATENCY_MS`. It counts calls
 * in Redis (`psp:*` keys), so the count covers every replica.
 */
@Injectable()
export class PspClient {
  private readonly keys: string[];

  constructor(
    private readonly store: RedisStore,
    private readonly config: AppConfig,
  ) {
    this.keys = ['in-flight', 'max-in-flight', 'calls', 'refused'].map((name) =>
      store.key(`psp:${name}`),
    );
  }

  /** Charges `amount` for `orderId`; 502 when the provider is at its limit. */
  async charge(orderId: string, amount: number): Promise<Charge> {
    const admitted = await this.store.client.eval(
      ENTER,
      this.keys.length,
      ...this.keys,
      PSP_CONCURRENCY,
    );
    try {
      // The provider takes as long to refuse a call as to accept one.
      await sleep(this.config.pspLatencyMs);
    } finally {
      await this.store.client.decr(this.keys[0]);
    }
    if (admitted !== 1)
      throw new BadGatewayException({
        statusCode: 502,
        error: 'Bad Gateway',
        code: 'PSP_REFUSED',
        message: `The payment provider refused the call: ${PSP_CONCURRENCY} calls were already in flight.`,
      });
    return { orderId, amount, reference: randomUUID() };
  }

  async stats(): Promise<PspStats> {
    const [inFlight, maxInFlight, calls, refused] = (
      await this.store.client.mget(this.keys)
    ).map((value) => Number(value ?? 0));
    return { calls, refused, inFlight, maxInFlight };
  }

  /** Forgets the counts (between two runs of the demo). */
  async reset(): Promise<void> {
    await this.store.client.del(...this.keys);
  }
}
