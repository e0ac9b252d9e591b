import { RedlockConfigError } from '../errors/redlock-config.error.js';
import type { Clock } from './clock.js';
import type { Lock } from './lock.js';
import { poll, type Ballot, type Tally } from './poll.js';
import type { RedlockNode } from './redlock-node.js';
import type { RestartQuarantine } from './restart-quarantine.js';
import { FENCE_SCRIPT } from './scripts/index.js';
import { show } from './timing.js';

// Fencing tokens across a quorum of independent masters. The safety argument
// (why a later token is always greater) is in fencing.md beside this file.

/**
 * A fencing token: a non-negative integer as a canonical decimal string
 * (digits only, no leading zeros), e.g. `"42"`. Strings survive JSON, Lua and
 * SQL parameters without rounding; compare them with
 * {@link compareFencingTokens} or as `BigInt`, never as plain strings.
 *
 * @publicApi
 */
export type FencingToken = string;

const CANONICAL = /^(0|[1-9][0-9]*)$/;

/**
 * Rounds of the token write-back before an acquire gives up (each extra
 * round only happens when a node already holds a higher counter than the
 * granting nodes showed, e.g. after an earlier acquire failed half-way).
 */
const MAX_FENCE_ROUNDS = 4;

/**
 * True when `value` is a fencing token: a canonical decimal string.
 *
 * @publicApi
 */
export function isFencingToken(value: unknown): value is FencingToken {
  return typeof value === 'string' && CANONICAL.test(value);
}

/**
 * Orders two fencing tokens numerically: negative when `a` is older than `b`,
 * 0 when equal, positive when newer. Throws `RedlockConfigError` on a value
 * that is not a token.
 *
 * @publicApi
 */
export function compareFencingTokens(a: FencingToken, b: FencingToken): number {
  const x = parseToken('a', a);
  const y = parseToken('b', b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Parses a token, naming `field` when it is not one. */
export function parseToken(field: string, value: unknown): bigint {
  if (!isFencingToken(value)) {
    throw new RedlockConfigError(
      field,
      `must be a fencing token (a decimal string such as "42", from lock.fencingToken), got ${show(value)}`,
    );
  }
  return BigInt(value);
}

/**
 * The counter key of a lock key: `<metaPrefix>fence:<lockKey>`. Lock keys
 * start with `keyPrefix` and counter keys with `metaPrefix`, and neither
 * prefix may start with the other, so the two never collide; keeping the
 * whole lock key inside gives apps with different `keyPrefix`es their own
 * counters.
 *
 * @publicApi
 */
export function fenceCounterKey(metaPrefix: string, lockKey: string): string {
  return `${metaPrefix}fence:${lockKey}`;
}

/** What the fencing round needs from the algorithm (implemented by `Redlock`). */
export interface FencingQuorum {
  readonly nodes: readonly RedlockNode[];
  readonly quorum: number;
  readonly clock: Clock;
  /** Nodes younger than `restartQuarantine` store tokens, but do not count. */
  readonly quarantine: Pick<RestartQuarantine, 'grant'>;
}

/**
 * Round 2 of a fenced acquire, run once the lock is held: proposes, per
 * resource, one more than the highest counter the granting nodes reported
 * (round 1), and stores it on every node whose counter is lower. The tokens
 * stand once a quorum stored all of them; nodes that refused report their
 * counters, and the next round proposes above those.
 *
 * Resolves with `undefined` and sets `lock.fencingTokens` on success, or with
 * the failure reason: `expired` when the lock's validity ran out meanwhile,
 * `unreachable` when no quorum stored the tokens. The caller then releases
 * the lock as after any failed attempt.
 */
export async function issueFencingTokens(
  redlock: FencingQuorum,
  lock: Lock,
  counterKeys: readonly string[],
  grants: readonly Ballot[],
  nodeTimeout: number,
): Promise<'expired' | 'unreachable' | undefined> {
  const proposal = counterKeys.map(() => 0n);
  for (const ballot of grants) {
    if (ballot.outcome !== 'granted') continue;
    const counters = (ballot.reply as unknown[]).slice(2);
    counters.forEach((c, i) => {
      proposal[i] = max(proposal[i], counterValue(c) + 1n);
    });
  }
  const decided = (t: Tally) =>
    t.granted >= redlock.quorum || t.granted + t.pending < redlock.quorum;
  for (let round = 1; round <= MAX_FENCE_ROUNDS; round++) {
    const args = proposal.map(String);
    const ballots = await poll(
      redlock.nodes,
      (node) => node.run(FENCE_SCRIPT, counterKeys, args),
      (reply, i) =>
        (reply as unknown[])[0] === 1 ? redlock.quarantine.grant(i) : 'busy',
      nodeTimeout,
      decided,
      // Tokens stored once the lock's validity is over would fence nothing.
      { limitMs: lock.deadline - redlock.clock.now() },
    );
    if (redlock.clock.now() >= lock.deadline) return 'expired';
    const stored = ballots.filter((b) => b.outcome === 'granted').length;
    if (stored >= redlock.quorum) {
      setFencingTokens(
        lock,
        new Map(lock.resources.map((resource, i) => [resource, args[i]])),
      );
      return undefined;
    }
    const refusals = ballots.filter((b) => b.outcome === 'busy');
    if (refusals.length === 0) return 'unreachable';
    // Every proposal moves up, also where this round was accepted: a node
    // that stored it now refuses the same value.
    for (let i = 0; i < proposal.length; i++) {
      for (const b of refusals)
        proposal[i] = max(
          proposal[i],
          counterValue((b.reply as unknown[])[i + 1]),
        );
      proposal[i] += 1n;
    }
  }
  return 'unreachable';
}

function setFencingTokens(
  lock: Lock,
  tokens: ReadonlyMap<string, FencingToken>,
): void {
  (
    lock as { fencingTokens?: ReadonlyMap<string, FencingToken> }
  ).fencingTokens = tokens;
}

/** A counter as a node returned it; anything that is not a token (a key someone else wrote) counts as 0. */
function counterValue(reply: unknown): bigint {
  const text =
    typeof reply === 'string'
      ? reply
      : Buffer.isBuffer(reply)
        ? reply.toString()
        : typeof reply === 'number'
          ? String(reply)
          : '';
  return isFencingToken(text) ? BigInt(text) : 0n;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
