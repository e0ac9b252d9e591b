import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { splitUrls, type Environment } from './environment.js';

/**
 * The sample's own settings, typed, from the validated environment (see
 * {@link Environment}). Tests replace it with
 * `overrideProvider(AppConfig).useValue(...)`.
 */
@Injectable()
export class AppConfig {
  readonly redisUrls: string[];
  readonly stockRedisUrl: string;
  readonly keyPrefix: string;
  readonly locking: boolean;
  readonly checkWriteGapMs: number;
  readonly lockWaitTimeoutMs: number;
  readonly pspLatencyMs: number;
  readonly repriceGapMs: number;
  readonly port: number;
  readonly host: string;

  constructor(config: ConfigService<Environment, true>) {
    const get = <K extends keyof Environment>(key: K) =>
      config.get(key, { infer: true });
    this.redisUrls = splitUrls(get('REDIS_URLS'));
    this.stockRedisUrl = get('STOCK_REDIS_URL') ?? this.redisUrls[0];
    this.keyPrefix = get('KEY_PREFIX');
    this.locking = get('LOCKING') !== 'off';
    this.checkWriteGapMs = get('CHECK_WRITE_GAP_MS');
    this.lockWaitTimeoutMs = get('LOCK_WAIT_TIMEOUT_MS');
    this.pspLatencyMs = get('PSP_LATENCY_MS');
    this.repriceGapMs = get('REPRICE_GAP_MS');
    this.port = get('PORT');
    this.host = get('HOST');
  }
}
