import { Injectable } from '@nestjs/common';
import { RedisStore } from '../store/redis-store.js';

/**
 * Stock levels in Redis, one plain counter per SKU (`stock:<sku>`). This is
 * the only place that writes stock, so making the write conditional (a
 * fenced write) later touches this file alone.
 *
 * Reads and writes are deliberately separate commands, as in an app whose
 * stock check and update are two steps: only a lock makes the pair atomic.
 */
@Injectable()
export class StockRepository {
  constructor(private readonly store: RedisStore) {}

  /** Current levels; a SKU never stocked reads as 0. */
  async read(skus: readonly string[]): Promise<Map<string, number>> {
    const values = await this.store.client.mget(
      skus.map((sku) => this.key(sku)),
    );
    return new Map(skus.map((sku, i) => [sku, Number(values[i] ?? 0)]));
  }

  /** Overwrites the levels given (all in one command). */
  async write(levels: ReadonlyMap<string, number>): Promise<void> {
    if (levels.size === 0) return;
    await this.store.client.mset(
      [...levels].flatMap(([sku, quantity]) => [this.key(sku), quantity]),
    );
  }

  private key(sku: string): string {
    return this.store.key(`stock:${sku}`);
  }
}
