import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../config/app-config.js';

/**
 * The app's own data store (stock and orders), separate from the lock
 * nodes' clients, which `RedlockModule` owns. Every key goes through `key()`
 * so one prefix isolates a whole app instance (tests share Redis servers).
 */
@Injectable()
export class RedisStore implements OnApplicationShutdown {
  readonly client: Redis;
  private readonly prefix: string;

  constructor(config: AppConfig) {
    this.prefix = config.keyPrefix;
    // One retry per command: a dead store should fail a request, not hang it.
    this.client = new Redis(config.stockRedisUrl, { maxRetriesPerRequest: 1 });
  }

  key(name: string): string {
    return this.prefix + name;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
