import { jest } from '@jest/globals';

// `.ci/run` only (REDLOCK_TEST_RETRIES=1): a test that fails is run once
// more before it counts as failed, and its first failure is printed
// ("retry" in the log), so a timing flake on a loaded CI runner is seen
// rather than hidden. A test that fails twice still fails the run; `npm
// test` elsewhere never retries.
const retries = Number(process.env.REDLOCK_TEST_RETRIES ?? '0');
if (retries > 0) jest.retryTimes(retries, { logErrorsBeforeRetry: true });
