import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { RedlockModule } from 'nestjs-redlock';
import { OrdersController } from './orders.controller';
import { OrdersService } from './orders.service';

@Module({
  imports: [
    ConfigModule.forRoot({ ignoreEnvFile: true }),
    RedlockModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        clients: config
          .getOrThrow<string>('REDIS_URLS')
          .split(',')
          .map((url) => url.trim()),
        ttl: 10_000,
        waitTimeout: Number(config.get('LOCK_WAIT_TIMEOUT_MS') ?? 3_000),
      }),
    }),
  ],
  controllers: [OrdersController],
  providers: [OrdersService],
})
export class AppModule {}
