import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { LockService } from 'nestjs-redlock';

/**
 * The lock nodes as a terminus health indicator: `up` with every node
 * answering, `degraded` (still 200) while a quorum does, `down` (503)
 * below it, when no lock can be taken.
 */
@Injectable()
export class LocksHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly locks: LockService,
  ) {}

  async isHealthy(key = 'locks') {
    const indicator = this.indicators.check(key);
    const { healthy, up, quorum, nodes } = await this.locks.health();
    const data = { up, quorum, nodes };
    if (!healthy) return indicator.down(data);
    return up < nodes.length ? indicator.degraded(data) : indicator.up(data);
  }
}
