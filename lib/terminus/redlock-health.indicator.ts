import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import {
  HealthIndicatorService,
  type HealthIndicatorResult,
} from '@nestjs/terminus';
import type { LockService } from '../lock.service.js';
import { getLockServiceToken } from '../redlock.constants.js';

/**
 * Options of {@link RedlockHealthIndicator.isHealthy}.
 *
 * @publicApi
 */
export interface RedlockHealthCheckOptions {
  /** The lock set to check (a `RedlockModule.forRoot({ name })`); default: the unnamed one. */
  lockSet?: string;
  /** How long to wait for the nodes, in ms. Default: `health()`'s (1 s). */
  timeoutMs?: number;
  /** A node answering slower than this, in ms, is named in `slow`. Default 100. */
  slowMs?: number;
}

/**
 * The lock nodes as a `@nestjs/terminus` health indicator (import it from
 * `nestjs-redlock/terminus`; `@nestjs/terminus` 11 or 12 must be
 * installed). `up` when every node answers, `degraded` (HTTP 200;
 * terminus 12, `up` on 11) while a quorum does, `down` (503) below it,
 * when no lock can be taken. The
 * details give `up`, `quorum`, each node (latency or error), and name the
 * `quarantined` (restarted too recently to count), `clockSuspect` (held
 * out by the clock monitor) and `slow` nodes.
 *
 * ```ts
 * @Get('health')
 * @HealthCheck()
 * check() {
 *   return this.health.check([() => this.locks.isHealthy('locks')]);
 * }
 * ```
 *
 * @publicApi
 */
@Injectable()
export class RedlockHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly moduleRef: ModuleRef,
  ) {}

  async isHealthy(
    key = 'locks',
    options: RedlockHealthCheckOptions = {},
  ): Promise<HealthIndicatorResult> {
    const indicator = this.indicators.check(key);
    const service = this.moduleRef.get<LockService>(
      getLockServiceToken(options.lockSet),
      { strict: false },
    );
    const { healthy, up, quorum, nodes } = await service.health(
      options.timeoutMs,
    );
    const slowMs = options.slowMs ?? 100;
    const data = {
      up,
      quorum,
      nodes,
      quarantined: nodes.filter((n) => n.quarantined).map((n) => n.node),
      clockSuspect: nodes.filter((n) => n.clockSuspect).map((n) => n.node),
      slow: nodes
        .filter((n) => n.up && (n.latencyMs ?? 0) > slowMs)
        .map((n) => n.node),
    };
    if (!healthy) return indicator.down(data);
    const impaired =
      up < nodes.length ||
      data.quarantined.length > 0 ||
      data.clockSuspect.length > 0;
    // Terminus 11 has no `degraded`: there an impaired quorum reads `up`.
    return impaired && typeof indicator.degraded === 'function'
      ? indicator.degraded(data)
      : indicator.up(data);
  }
}
