/** What the test tells each worker process, read once at start. */
const env = process.env;

/** The lock nodes (may be closed ports: the outage case). */
export const REDIS_URLS = (env.REDIS_URLS ?? '').split(',').filter(Boolean);
/** The queue's and the records' node: up even when the lock nodes are not. */
export const QUEUE_URL = env.QUEUE_URL ?? REDIS_URLS[0];
/** Keeps the keys of one test run apart from the others'. */
export const RUN_ID = env.RUN_ID ?? 'dev';
export const QUEUE = env.QUEUE ?? `accounts-${RUN_ID}`;
/** `recipe`: the documented processor; `skip`: the wrong one (the control). */
export const MODE = (env.MODE ?? 'recipe') as 'recipe' | 'skip';
/** Jobs one worker process runs at once. */
export const CONCURRENCY = Number(env.CONCURRENCY ?? 2);
/** How long a job's body takes, in ms. */
export const BODY_MS = Number(env.BODY_MS ?? 20);
