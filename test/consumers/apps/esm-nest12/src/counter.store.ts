import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { REDIS_CLIENTS } from './redis.module.js';

/** Order counters in Redis, on the app's first connection. */
@Injectable()
export class CounterStore {
  constructor(@Inject(REDIS_CLIENTS) private readonly clients: Redis[]) {}

  async read(id: string): Promise<number> {
    return Number((await this.clients[0].get(`count:order:${id}`)) ?? 0);
  }

  async write(id: string, count: number): Promise<void> {
    await this.clients[0].set(`count:order:${id}`, count);
  }
}
