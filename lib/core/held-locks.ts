import type { Lock } from './lock.js';

/**
 * Locks held before a new one makes the set drop the locks that ran out
 * without a release (a lock acquired and left to expire, to run something
 * once per key); then twice as many as are left.
 */
export const HELD_BEFORE_SWEEP = 1000;

/**
 * The locks an instance handed to its callers and that were not released
 * yet: `quit()` releases them on the nodes, so a process that stops does not
 * leave its keys to expire (other processes wait for nothing).
 */
export class HeldLocks {
  private readonly locks = new Set<Lock>();
  private sweepAt = HELD_BEFORE_SWEEP;

  /** @internal Locks tracked now. */
  get size(): number {
    return this.locks.size;
  }

  add(lock: Lock): void {
    if (this.locks.size >= this.sweepAt) this.sweep();
    this.locks.add(lock);
  }

  delete(lock: Lock): void {
    this.locks.delete(lock);
  }

  /** Whether one of these locks, still held, is signed with `value`. */
  holds(value: string): boolean {
    for (const lock of this.locks)
      if (lock.value === value && lock.isHeld) return true;
    return false;
  }

  /** The locks still held now (validity left, not released); forgets all. */
  takeAll(): Lock[] {
    const held = [...this.locks].filter((lock) => lock.isHeld);
    this.locks.clear();
    return held;
  }

  private sweep(): void {
    for (const lock of this.locks) if (!lock.isHeld) this.locks.delete(lock);
    this.sweepAt = Math.max(HELD_BEFORE_SWEEP, 2 * this.locks.size);
  }
}
