import { Global, Module } from '@nestjs/common';
import { RedisStore } from './redis-store.js';

/** The app's data store, shared by the stock and orders modules. */
@Global()
@Module({ providers: [RedisStore], exports: [RedisStore] })
export class StoreModule {}
