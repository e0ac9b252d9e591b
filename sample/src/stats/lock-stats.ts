import { Injectable } from '@nestjs/common';
import { LockService } from 'nestjs-redlock';

/** Counters the demo reads from `GET /stats`. */
export interface LockStatsSnapshot {
  /** Acquires that found their resources held and had to wait. */
  lockWaits: number;
  /** Retries sent to Redis after a busy attempt, over all acquires. */
  lockRetries: number;
}

/** The library's own counters (`Redlock.stats`), as the demo reports them. */
@Injectable()
export class LockStats {
  constructor(private readonly locks: LockService) {}

  snapshot(): LockStatsSnapshot {
    const { waited, retries } = this.locks.redlock.stats;
    return { lockWaits: waited, lockRetries: retries };
  }
}
