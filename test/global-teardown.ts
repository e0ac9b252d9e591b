/** Stops the servers started by global-setup, by pid, whether the run passed or failed. */
export default async function globalTeardown(): Promise<void> {
  await Promise.all(
    (globalThis.__REDLOCK_TEST_SERVERS__ ?? []).map((s) => s.stop()),
  );
}
