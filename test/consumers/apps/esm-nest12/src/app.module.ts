import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import type { Redis } from 'ioredis';
import { RedlockModule } from 'nestjs-redlock';
import { CounterStore } from './counter.store.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';
import { REDIS_CLIENTS, RedisModule } from './redis.module.js';

@Module({
  imports: [
    ConfigModule.forRoot({ ignoreEnvFile: true }),
    RedisModule,
    // The app's own connections, handed over: with closeClients the lock
    // closes them at shutdown, after releasing the locks still held.
    RedlockModule.forRootAsync({
      imports: [RedisModule, ConfigModule],
      inject: [REDIS_CLIENTS, ConfigService],
      useFactory: (clients: Redis[], config: ConfigService) => ({
        clients,
        closeClients: true,
        ttl: 10_000,
        waitTimeout: Number(config.get('LOCK_WAIT_TIMEOUT_MS') ?? 3_000),
      }),
    }),
  ],
  controllers: [OrdersController],
  providers: [OrdersService, CounterStore],
})
export class AppModule {}
