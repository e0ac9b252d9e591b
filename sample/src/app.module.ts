import { Module, ValidationPipe } from '@nestjs/common';
import { APP_PIPE } from '@nestjs/core';
import { RedlockModule } from 'nestjs-redlock';
import { AppConfig } from './config/app-config.js';
import { AppConfigModule } from './config/app-config.module.js';
import { HealthModule } from './health/health.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { StatsModule } from './stats/stats.module.js';
import { StockModule } from './stock/stock.module.js';
import { StoreModule } from './store/store.module.js';

@Module({
  imports: [
    AppConfigModule,
    StoreModule,
    StatsModule,
    // The same app on 1 or 5 (or any N) Redis masters: only REDIS_URLS changes.
    RedlockModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        clients: config.redisUrls,
        keyPrefix: `${config.keyPrefix}lock:`,
        metaPrefix: `${config.keyPrefix}redlock:`,
        waitTimeout: config.lockWaitTimeoutMs,
      }),
    }),
    StockModule,
    OrdersModule,
    HealthModule,
  ],
  providers: [
    // Here rather than in main.ts so tests booting AppModule validate alike.
    {
      provide: APP_PIPE,
      useValue: new ValidationPipe({
        whitelist: true,
        forbidNonWhitelisted: true,
        transform: true,
      }),
    },
  ],
})
export class AppModule {}
