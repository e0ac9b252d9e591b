import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { RedisStore } from '../store/redis-store.js';

/** A placed order, as recorded and returned. */
export interface Order {
  id: string;
  items: { sku: string; qty: number }[];
  /** Whether the order ran under the SKU locks. */
  locked: boolean;
  placedAt: string;
}

/** The order log: one JSON entry per accepted order in the `orders` list. */
@Injectable()
export class OrderRepository {
  constructor(private readonly store: RedisStore) {}

  async record(items: Order['items'], locked: boolean): Promise<Order> {
    const order: Order = {
      id: randomUUID(),
      items,
      locked,
      placedAt: new Date().toISOString(),
    };
    await this.store.client.rpush(
      this.store.key('orders'),
      JSON.stringify(order),
    );
    return order;
  }

  /** Every recorded order, oldest first. */
  async all(): Promise<Order[]> {
    const entries = await this.store.client.lrange(
      this.store.key('orders'),
      0,
      -1,
    );
    return entries.map((entry) => JSON.parse(entry) as Order);
  }
}
