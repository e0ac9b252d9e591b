import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { redlockModule } from '../shared/redis';
import { TooManyRequestsFilter } from './busy.filter';
import { StockController } from './stock.controller';
import { StockService } from './stock.service';

/** The HTTP app, run on Fastify (`new FastifyAdapter()`). */
@Module({
  imports: [redlockModule()],
  controllers: [StockController],
  providers: [StockService],
})
export class FastifyAppModule {}

/** The same app with the user's own global filter for lock conflicts. */
@Module({
  imports: [redlockModule()],
  controllers: [StockController],
  providers: [
    StockService,
    { provide: APP_FILTER, useClass: TooManyRequestsFilter },
  ],
})
export class FastifyUserFilterAppModule {}
