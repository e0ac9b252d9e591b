import { Injectable } from '@nestjs/common';
import { RedisStore } from '../store/redis-store.js';

/** One priced item, and the catalogue version its price belongs to. */
export interface PricedItem {
  sku: string;
  /** In cents. */
  price: number;
  version: number;
}

/**
 * The catalogue in Redis: one hash field per SKU (`catalogue`), each item
 * written on its own, as in an app whose repricing updates rows one by
 * one. Only a lock keeps readers from seeing a catalogue half repriced.
 */
@Injectable()
export class CatalogueRepository {
  constructor(private readonly store: RedisStore) {}

  /** Every item, by SKU. */
  async all(): Promise<PricedItem[]> {
    const fields = await this.store.client.hgetall(this.key());
    return Object.keys(fields)
      .sort()
      .map((sku) => ({
        sku,
        ...(JSON.parse(fields[sku]) as Omit<PricedItem, 'sku'>),
      }));
  }

  async put({ sku, price, version }: PricedItem): Promise<void> {
    await this.store.client.hset(
      this.key(),
      sku,
      JSON.stringify({ price, version }),
    );
  }

  async clear(): Promise<void> {
    await this.store.client.del(this.key());
  }

  private key(): string {
    return this.store.key('catalogue');
  }
}
