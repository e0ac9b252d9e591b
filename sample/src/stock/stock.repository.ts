import { ConflictException, Injectable } from '@nestjs/common';
import {
  FencedStore,
  LockService,
  StaleFencingTokenError,
  fenceOf,
} from 'nestjs-redlock';
import { RedisStore } from '../store/redis-store.js';

/** The lock resource of a SKU: what `@Locked('sku:<…sku>')` and `run('sku:…')` lock. */
export const skuResource = (sku: string): string => `sku:${sku}`;

/**
 * Stock levels in Redis, one plain counter per SKU (`stock:<sku>`). This is
 * the only place that reads and writes stock.
 *
 * Reads and writes are deliberately separate commands, as in an app whose
 * stock check and update are two steps: only a lock makes the pair atomic.
 * Under a fenced lock (`fencing: true`) both go through a `FencedStore`:
 * the read records the lock's fencing token for each SKU and the write is
 * applied only if no newer holder has been seen since. A holder paused past
 * its lease (a long GC, say) is refused instead of overwriting the stock a
 * newer holder already sold from.
 */
@Injectable()
export class StockRepository {
  private readonly fenced: FencedStore;

  constructor(
    private readonly store: RedisStore,
    private readonly locks: LockService,
  ) {
    this.fenced = new FencedStore(store.client, {
      prefix: store.key('fence:'),
    });
  }

  /** Current levels; a SKU never stocked reads as 0. */
  async read(skus: readonly string[]): Promise<Map<string, number>> {
    const lock = this.fencedLock();
    const values = lock
      ? await this.guard(() =>
          Promise.all(
            skus.map((sku) =>
              this.fenced.get(fenceOf(lock, skuResource(sku)), this.key(sku)),
            ),
          ),
        )
      : await this.store.client.mget(skus.map((sku) => this.key(sku)));
    return new Map(skus.map((sku, i) => [sku, Number(values[i] ?? 0)]));
  }

  /** Overwrites the levels given. */
  async write(levels: ReadonlyMap<string, number>): Promise<void> {
    if (levels.size === 0) return;
    const lock = this.fencedLock();
    if (!lock) {
      await this.store.client.mset(
        [...levels].flatMap(([sku, quantity]) => [this.key(sku), quantity]),
      );
      return;
    }
    await this.guard(() =>
      Promise.all(
        [...levels].map(([sku, quantity]) =>
          this.fenced.set(
            fenceOf(lock, skuResource(sku)),
            this.key(sku),
            quantity,
          ),
        ),
      ),
    );
  }

  /** The current call's lock, when it carries fencing tokens. */
  private fencedLock() {
    const lock = this.locks.current();
    return lock?.fencingTokens ? lock : undefined;
  }

  /** A refused stale write answers 409, like a lock that could not be had. */
  private async guard<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (!(error instanceof StaleFencingTokenError)) throw error;
      throw new ConflictException({
        statusCode: 409,
        error: 'Conflict',
        code: 'STALE_LOCK',
        message: `The lock on ${error.resource} was lost to a newer holder; nothing was written.`,
      });
    }
  }

  private key(sku: string): string {
    return this.store.key(`stock:${sku}`);
  }
}
