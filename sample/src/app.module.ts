import { Module, ValidationPipe } from '@nestjs/common';
import { APP_PIPE } from '@nestjs/core';
import { RedlockModule } from 'nestjs-redlock';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { CatalogueModule } from './catalogue/catalogue.module.js';
import { AppConfigModule } from './config/app-config.module.js';
import { splitUrls, type Environment } from './config/environment.js';
import { HealthModule } from './health/health.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { PaymentsModule } from './payments/payments.module.js';
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
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService<Environment, true>) => {
        const prefix = config.get('KEY_PREFIX', { infer: true });
        return {
          clients: splitUrls(config.get('REDIS_URLS', { infer: true })),
          keyPrefix: `${prefix}lock:`,
          metaPrefix: `${prefix}redlock:`,
          waitTimeout: config.get('LOCK_WAIT_TIMEOUT_MS', { infer: true }),
        };
      },
    }),
    StockModule,
    OrdersModule,
    PaymentsModule,
    CatalogueModule,
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
