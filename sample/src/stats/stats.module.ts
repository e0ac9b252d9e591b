import { Module } from '@nestjs/common';
import { LockStats } from './lock-stats.js';
import { StatsController } from './stats.controller.js';

@Module({
  controllers: [StatsController],
  providers: [LockStats],
  exports: [LockStats],
})
export class StatsModule {}
