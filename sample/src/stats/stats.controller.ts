import { Controller, Get } from '@nestjs/common';
import { LockStats, type LockStatsSnapshot } from './lock-stats.js';

/** `GET /stats`: lock wait counters since the app started. */
@Controller('stats')
export class StatsController {
  constructor(private readonly stats: LockStats) {}

  @Get()
  get(): LockStatsSnapshot {
    return this.stats.snapshot();
  }
}
