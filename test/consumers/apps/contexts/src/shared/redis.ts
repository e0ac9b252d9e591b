import { RedlockModule } from 'nestjs-redlock';

/** The Redis nodes the consumer check started (REDIS_URLS, comma-separated). */
export function redisUrls(): string[] {
  const urls = (process.env.REDIS_URLS ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  if (urls.length < 3) throw new Error('REDIS_URLS must name 3 Redis nodes');
  return urls;
}

/** `host:port` of each node, as a lock error would name them. */
export function nodeAddresses(): string[] {
  return redisUrls().map((url) => new URL(url).host);
}

/**
 * The lock module every context app imports: the nodes of REDIS_URLS, a
 * lease long enough that no test waits for one to expire.
 */
export function redlockModule(options: { waitTimeout?: number } = {}) {
  return RedlockModule.forRoot({
    clients: redisUrls(),
    ttl: 10_000,
    waitTimeout: options.waitTimeout ?? 10_000,
  });
}
