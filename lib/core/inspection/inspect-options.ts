import { HEALTH_TIMEOUT_MS, LOCK_MODES } from '../config/defaults.js';
import type { LockMode } from '../config/lock-options.js';
import { checkOptions } from '../config/option-table.js';
import {
  oneOf,
  permitCount,
  positiveMs,
  type OptionRules,
} from '../config/rules.js';
import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import type {
  LockHolder,
  LockInspection,
  NodeInspection,
} from '../operations/inspect.js';
import { show } from '../util/validate.js';

/**
 * Options of `Redlock.inspect`: how long to wait for the nodes, and the
 * shape of the lock to read, as the resource is acquired (`permits` for a
 * semaphore, `mode` for a read/write lock; neither for a mutex).
 *
 * @publicApi
 */
export interface InspectOptions {
  /** How long to wait for the nodes, in ms. Default 1000. */
  timeoutMs?: number;
  /**
   * Read a semaphore of this many permits: each permit slot's holder
   * (`SemaphoreInspection`). Pass the count the resource is acquired with:
   * slots beyond it are not read.
   */
  permits?: number;
  /**
   * Read a read/write lock (`ReadWriteInspection`): either value reads the
   * same keys, so the `mode` of an acquire's options can be passed as is.
   * Not with `permits`.
   */
  mode?: LockMode;
}

/** `inspect` options for a semaphore. @publicApi */
export type SemaphoreInspectOptions = InspectOptions & { permits: number };

/** `inspect` options for a read/write lock. @publicApi */
export type ReadWriteInspectOptions = InspectOptions & { mode: LockMode };

/**
 * What the nodes hold for a semaphore (`inspect(resource, { permits })`):
 * each permit slot as `inspect` reads a mutex's key, how many are taken,
 * and the count the nodes hold the resource with.
 *
 * @publicApi
 */
export interface SemaphoreInspection {
  /** The resource asked for (not a slot). */
  readonly resource: string;
  /** The resource's key: it holds `~permits:<n>` while any permit lives. */
  readonly key: string;
  /** The permit count read. */
  readonly permits: number;
  /**
   * The permit count a quorum of nodes hold the resource with (the key's
   * mark), while permits are held: another count than `permits` means
   * the resource is used with that one (and slots past `permits` were not
   * read).
   */
  readonly inUse?: number;
  /** Slots a quorum of nodes hold for one holder each: permits taken. */
  readonly held: number;
  /** Of those, the slots this instance holds. */
  readonly heldHere: number;
  /**
   * Each permit slot, in order: `resource` is `<resource>#permit-<i>`,
   * `key` its Redis key (`<key>#permit-<i>`), `holder` and each node's
   * lease as for a mutex (no `queued`: permit waiters do not queue on the
   * nodes; the fencing token is the resource's, in `nodes`).
   */
  readonly slots: readonly LockInspection[];
  /** Each node, in the order of `clients`. */
  readonly nodes: readonly SemaphoreNodeInspection[];
}

/**
 * One node's view of a semaphore's resource (see `SemaphoreInspection`).
 *
 * @publicApi
 */
export interface SemaphoreNodeInspection extends Pick<
  NodeInspection,
  'node' | 'up' | 'error' | 'fencingToken'
> {
  /** The permit count the resource key's mark says, while any permit lives on the node. */
  readonly permits?: number;
  /** Permit holders live on the node (in any slot, read or not). */
  readonly holders?: number;
}

/**
 * One reader of a read/write lock as one node holds it: whose, and its
 * lease left on that node's clock.
 *
 * @publicApi
 */
export interface ReaderInspection {
  readonly holder: LockHolder;
  readonly ttlMs: number;
}

/**
 * One node's view of a read/write lock (see `ReadWriteInspection`).
 *
 * @publicApi
 */
export interface ReadWriteNodeInspection extends Pick<
  NodeInspection,
  'node' | 'up' | 'error' | 'exists' | 'ttlMs'
> {
  /** A writer holds the key on the node: whose (never the value). */
  readonly writer?: LockHolder;
  /** The readers live on the node, the shortest lease first. */
  readonly readers?: readonly ReaderInspection[];
  /** A writer refused by readers waits: whose intent, and its life left. */
  readonly writerWaiting?: ReaderInspection;
}

/**
 * What the nodes hold for a read/write lock (`inspect(resource, { mode })`):
 * a writer, or readers with their leases, and a writer waiting for them.
 *
 * @publicApi
 */
export interface ReadWriteInspection {
  readonly resource: string;
  /** The Redis key of the lock (the writer's value, or a mark while readers hold it). */
  readonly key: string;
  /** A writer or at least one reader holds it over a quorum of nodes. */
  readonly held: boolean;
  /** Which side holds it, when held. */
  readonly mode?: LockMode;
  /** The writer, when one holds it. */
  readonly writer?: LockHolder;
  /** Readers that a quorum of nodes hold live. */
  readonly readers: number;
  /** Of those, this instance's. */
  readonly readersHere: number;
  /**
   * A writer's intent lives on a quorum of nodes: it waits for the readers,
   * and new readers are refused meanwhile. Whose, when so.
   */
  readonly writerWaiting?: LockHolder;
  /** Each node, in the order of `clients`. */
  readonly nodes: readonly ReadWriteNodeInspection[];
}

/** Every rule of {@link InspectOptions}. */
const INSPECT_OPTION_RULES = {
  timeoutMs: positiveMs,
  permits: permitCount,
  mode: oneOf(LOCK_MODES),
} satisfies OptionRules<InspectOptions>;

/** The second argument of `inspect` (a timeout, or options) checked, defaults filled. */
export function inspectOptions(
  options: number | InspectOptions | undefined,
): InspectOptions & { timeoutMs: number } {
  if (options === undefined || typeof options === 'number')
    return { timeoutMs: options ?? HEALTH_TIMEOUT_MS };
  if (typeof options !== 'object' || options === null)
    throw new RedlockConfigError(
      'options',
      `must be a timeout in ms or an object, got ${show(options)}`,
    );
  checkOptions(options, INSPECT_OPTION_RULES);
  if (options.permits !== undefined && options.mode !== undefined)
    throw new RedlockConfigError(
      'options.mode',
      'a resource is a semaphore (permits) or a read/write lock (mode), not both',
    );
  return { ...options, timeoutMs: options.timeoutMs ?? HEALTH_TIMEOUT_MS };
}

/**
 * What `inspect(resource, options)` resolves with, by its options: a
 * {@link SemaphoreInspection} with `permits`, a {@link ReadWriteInspection}
 * with `mode`, a `LockInspection` with neither (or a timeout); any of them
 * for options whose type leaves it open.
 *
 * @publicApi
 */
export type InspectionOf<O> = O extends { permits: number }
  ? SemaphoreInspection
  : O extends { mode: LockMode }
    ? ReadWriteInspection
    : O extends
          | number
          | undefined
          | { timeoutMs?: number; permits?: undefined; mode?: undefined }
      ? LockInspection
      : LockInspection | SemaphoreInspection | ReadWriteInspection;
