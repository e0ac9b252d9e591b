/**
 * What the test tells each scheduler process, read once at start: the
 * decorators' options are fixed when the classes are defined.
 */
const env = process.env;

/** The lock nodes (may be closed ports: the outage case). */
export const REDIS_URLS = (env.REDIS_URLS ?? '').split(',').filter(Boolean);
/** Where runs are recorded: a node that is up even when the lock nodes are not. */
export const RECORD_URL = env.RECORD_URL ?? REDIS_URLS[0];
/** Keeps the keys of one test run apart from the others'. */
export const RUN_ID = env.RUN_ID ?? 'dev';
/** This replica's lag behind the others (simulated clock skew), in ms. */
export const SKEW_MS = Number(env.SKEW_MS ?? 0);
/** 0 leaves `minHold` out: the old recipe, the control. */
export const MIN_HOLD_MS = Number(env.MIN_HOLD_MS ?? 500);
/** `warn` to skip an outage with a warning instead of an error. */
export const ON_UNAVAILABLE = env.ON_UNAVAILABLE as 'warn' | undefined;
/**
 * The shared start (epoch ms): every replica mounts its @Interval at this
 * moment (or a whole number of seconds later when it booted late), so the
 * replicas count the same interval ticks.
 */
export const ALIGN_AT = Number(env.ALIGN_AT ?? Date.now());
/**
 * A rolling restart: this replica sends itself SIGTERM right after its Nth
 * run of the @Cron job (0: never).
 */
export const STOP_AFTER_RUNS = Number(env.STOP_AFTER_RUNS ?? 0);
