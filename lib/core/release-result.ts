import type { NodeVote } from '../errors/node-vote.js';

/**
 * What `lock.release()` resolves with. It never rejects: a node that fails or
 * times out is reported here, and its copy of the key expires with the lease.
 *
 * @publicApi
 */
export interface ReleaseResult {
  /** True when a quorum of nodes confirmed they deleted our keys. */
  readonly released: boolean;
  /** True when the lock's validity had already run out before the release (it may have been taken by another holder since). */
  readonly expired: boolean;
  /**
   * True when the lease went straight to another caller of this process
   * waiting for the same resources (in-process handoff, see
   * `localHandoff`): no node was asked, `nodes` is empty; or, at the end of
   * a handoff streak while no other process waited on the nodes, the nodes
   * renewed the lease for that caller first (`nodes` reports them).
   */
  readonly handedOver?: boolean;
  /**
   * True when the lock was one its caller waited for, and nobody of this
   * process waited for it at the release: its lease is kept until the event
   * loop turns, for a caller of this process that asks for the same
   * resources in the meantime (see `localHandoff`), and released on the
   * nodes after that if nobody did. `nodes` is empty: such a release that
   * misses the quorum is reported to the instance's logger instead (the keys
   * it could not delete expire with the lease). A
   * process that exits before the loop turns without `Redlock.quit()`
   * (which sends them first) leaves the keys to expire with the lease.
   */
  readonly deferred?: boolean;
  /**
   * Set when the lock was let go with its keys left to expire (`minHold`):
   * the ms they live on, once a quorum took the shorter lease. `released`
   * is false: nothing was deleted.
   */
  readonly expiresIn?: number;
  /** Each node's answer (`granted`: our keys were there and are deleted; `busy`: they were gone already). */
  readonly nodes: readonly NodeVote[];
}
