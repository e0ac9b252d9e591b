import { Injectable } from '@nestjs/common';

/**
 * The sample's settings, read once from the environment. Tests replace it
 * with `overrideProvider(AppConfig).useValue(...)`.
 *
 * - `REDIS_URLS`: comma-separated Redis masters for the locks (1 or 5, ...).
 *   Default `redis://127.0.0.1:6379`.
 * - `STOCK_REDIS_URL`: where stock and orders live. Default: the first of `REDIS_URLS`.
 * - `KEY_PREFIX`: prefix of every key the app writes (stock, orders, locks).
 * - `LOCKING`: `off` runs orders without the lock (for comparison); a
 *   request's `?locking=on|off` overrides it.
 * - `CHECK_WRITE_GAP_MS`: pause between reading the stock and writing it back. Default 5.
 * - `LOCK_WAIT_TIMEOUT_MS`: how long an order waits for a busy SKU. Default 15000.
 * - `PORT`, `HOST`: where to listen. Default 3000 on 127.0.0.1.
 */
@Injectable()
export class AppConfig {
  readonly redisUrls: string[];
  readonly stockRedisUrl: string;
  readonly keyPrefix: string;
  readonly locking: boolean;
  readonly checkWriteGapMs: number;
  readonly lockWaitTimeoutMs: number;
  readonly port: number;
  readonly host: string;

  constructor() {
    const env = process.env;
    this.redisUrls = (env.REDIS_URLS ?? 'redis://127.0.0.1:6379')
      .split(',')
      .map((url) => url.trim())
      .filter(Boolean);
    if (this.redisUrls.length === 0)
      throw new Error('REDIS_URLS is empty: give at least one redis:// URL');
    this.stockRedisUrl = env.STOCK_REDIS_URL ?? this.redisUrls[0];
    this.keyPrefix = env.KEY_PREFIX ?? '';
    this.locking = env.LOCKING !== 'off';
    this.checkWriteGapMs = numberFrom(env, 'CHECK_WRITE_GAP_MS', 5);
    this.lockWaitTimeoutMs = numberFrom(env, 'LOCK_WAIT_TIMEOUT_MS', 15_000);
    this.port = numberFrom(env, 'PORT', 3000);
    this.host = env.HOST ?? '127.0.0.1';
  }
}

function numberFrom(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`${name} must be a number >= 0, got "${raw}"`);
  return value;
}
