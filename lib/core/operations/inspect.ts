import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { HEALTH_TIMEOUT_MS } from '../config/defaults.js';
import type { RedlockContext } from '../context.js';
import { fenceCounterKey } from '../fencing/tokens.js';
import { poll } from '../nodes/poll.js';
import { INSPECT_SCRIPT } from '../scripts/index.js';
import { requirePositive, show } from '../util/validate.js';

/**
 * Who holds a lock key on a node, as `inspect` sees it: this instance (a
 * lock it handed out and that is not released), or another holder.
 *
 * @publicApi
 */
export type LockHolder = 'this-instance' | 'other';

/**
 * One node's view of a resource (see `Redlock.inspect`).
 *
 * @publicApi
 */
export interface NodeInspection {
  /** `host:port`, never with credentials. */
  readonly node: string;
  /** It answered within the timeout. */
  readonly up: boolean;
  /** Why not: `timeout`, or the client's error. */
  readonly error?: string;
  /** The lock key exists on the node. */
  readonly exists?: boolean;
  /** Its remaining lease in ms, when it exists. */
  readonly ttlMs?: number;
  /** Whose value it holds; never the value itself. */
  readonly holder?: LockHolder;
  /** Waiters in the node's queue for the key. */
  readonly queued?: number;
  /** The last fencing token issued for the resource on that node. */
  readonly fencingToken?: string;
}

/**
 * What the nodes hold for one resource, for an operator asking "who holds
 * order:42, and until when" (see `Redlock.inspect`).
 *
 * @publicApi
 */
export interface LockInspection {
  readonly resource: string;
  /** The Redis key of the lock. */
  readonly key: string;
  /** A quorum of nodes hold one value for the key: someone holds the lock. */
  readonly held: boolean;
  /** Who, when held. */
  readonly holder?: LockHolder;
  /** Each node, in the order of `clients`. */
  readonly nodes: readonly NodeInspection[];
}

/** See `Redlock.inspect`. */
export async function inspect(
  ctx: RedlockContext,
  resource: string,
  timeoutMs = HEALTH_TIMEOUT_MS,
): Promise<LockInspection> {
  checkResource(resource);
  requirePositive('timeoutMs', timeoutMs);
  const { metaPrefix } = ctx.config;
  const key = ctx.config.keyOf(resource);
  const keys = [key, `${metaPrefix}q:${key}`, fenceCounterKey(metaPrefix, key)];
  const ballots = await poll(
    ctx.nodes,
    (node) => node.run(INSPECT_SCRIPT, keys, []),
    () => 'granted',
    timeoutMs,
    () => false,
    { limitMs: timeoutMs },
  );
  const values = new Map<string, number>();
  const nodes = ballots.map((ballot): NodeInspection => {
    if (ballot.outcome !== 'granted')
      return {
        node: ballot.node,
        up: false,
        error: ballot.error ?? ballot.outcome,
      };
    const [value, pttl, queued, counter] = ballot.reply as [
      string | null,
      number,
      number,
      string | null,
    ];
    const fencing = counter === null ? {} : { fencingToken: String(counter) };
    if (value === null)
      return { node: ballot.node, up: true, exists: false, queued, ...fencing };
    values.set(value, (values.get(value) ?? 0) + 1);
    return {
      node: ballot.node,
      up: true,
      exists: true,
      ttlMs: pttl,
      holder: holderOf(ctx, value),
      queued,
      ...fencing,
    };
  });
  let held: string | undefined;
  for (const [value, count] of values) if (count >= ctx.quorum) held = value;
  return held === undefined
    ? { resource, key, held: false, nodes }
    : { resource, key, held: true, holder: holderOf(ctx, held), nodes };
}

/** Refuses a resource `inspect` cannot name. */
export function checkResource(resource: unknown): void {
  if (typeof resource !== 'string' || resource.length === 0)
    throw new RedlockConfigError(
      'resource',
      `must be a non-empty string, got ${show(resource)}`,
    );
}

/** Whose a lock value is: a lock this instance handed out and holds, or another's. */
export function holderOf(ctx: RedlockContext, value: string): LockHolder {
  return ctx.held.holds(value) ? 'this-instance' : 'other';
}
