import type { ResolvedTiming } from '../config/timing.js';
import { queueLife } from '../config/timing.js';
import type { RedlockContext } from '../context.js';
import { randomValue } from '../util/lock-value.js';

/** A read/write lock's wake list on a node (see `WAIT_HERE_LUA`), in its hash slot. */
export function wakeListKey(metaPrefix: string, key: string): string {
  return `${metaPrefix}sw:${key}`;
}

/**
 * How one waiting read/write acquire is woken by releases in other
 * processes: a refused attempt puts `member` on the wake lists of
 * the nodes that refused it, and a release there that frees room tells it
 * on this instance's channel (the mutex's release listener), so it asks
 * again at once instead of at its next poll. The polls stay: a lost
 * message, a crashed holder or a node restart never strand it.
 * Without a listening wait strategy (`waitStrategy: JitteredRetry`) it
 * takes no place, and only polls.
 */
export class RwWakeList {
  /** The entry on the nodes' wake lists (`<channel> <token>`), if it listens. */
  readonly member: string | undefined;
  /** How long a wake list lives after its last refusal, in ms. */
  readonly life: number;
  /** Whether an attempt was refused (it may be on lists: a grant takes it off). */
  listed = false;
  private readonly token = randomValue();
  private stopExpecting?: () => void;

  /** `waits`: false for `tryAcquire()`, which takes no place (nobody would hear the message). */
  constructor(
    private readonly ctx: RedlockContext,
    private readonly keys: readonly string[],
    timing: ResolvedTiming,
    waits: boolean,
  ) {
    const { contention } = ctx;
    this.member =
      waits && contention.listens
        ? `${contention.channel} ${this.token}`
        : undefined;
    this.life = queueLife(timing);
  }

  /**
   * Before an attempt: from now on, messages for this acquire count even
   * while no wait listens (its attempt is out), once the instance listens
   * at all (its first wait subscribes).
   */
  expect(): void {
    if (this.member !== undefined && !this.stopExpecting)
      this.stopExpecting = this.ctx.contention.expect(
        this.keys,
        this.token,
        true,
      );
  }

  /** During a wait: calls `wake` when a release names this acquire; returns the stop. */
  listen(wake: () => void): () => void {
    if (this.member === undefined) return () => undefined;
    return this.ctx.contention.listen(this.keys, this.token, wake);
  }

  /** The acquire is done (held or gave up): no more messages for it. */
  close(): void {
    this.stopExpecting?.();
  }
}
