import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Redis } from 'ioredis';

/** The app's own Redis connections, one per node (from REDIS_URLS). */
export const REDIS_CLIENTS = Symbol('REDIS_CLIENTS');

@Module({
  imports: [ConfigModule],
  providers: [
    {
      provide: REDIS_CLIENTS,
      inject: [ConfigService],
      useFactory: (config: ConfigService): Redis[] =>
        config
          .getOrThrow<string>('REDIS_URLS')
          .split(',')
          .map((url) => new Redis(url.trim())),
    },
  ],
  exports: [REDIS_CLIENTS],
})
export class RedisModule {}
