/**
 * Adds `work` to `owner.deferred` until it settles: work that outlives its
 * caller (a release held back or sent after a renewal, a failed attempt's
 * take-back, a lock left to expire) and that `quit()` must wait for before
 * it closes the connections, or the keys would stay until their lease ends.
 */
export function awaitedByQuit<T>(
  owner: { readonly deferred: Set<Promise<unknown>> },
  work: Promise<T>,
): Promise<T> {
  owner.deferred.add(work);
  const settled = () => owner.deferred.delete(work);
  work.then(settled, settled);
  return work;
}
