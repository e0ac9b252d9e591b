import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller.js';
import { LocksHealthIndicator } from './locks.health.js';

@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [LocksHealthIndicator],
})
export class HealthModule {}
