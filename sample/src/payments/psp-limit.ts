/**
 * How many calls the payment provider takes at once for our merchant
 * account; the next one is refused. The semaphore's `permits` (see
 * `PaymentsService`) is this number. A file of its own, free of Nest, so
 * the demo reads it too.
 */
export const PSP_CONCURRENCY = 8;
