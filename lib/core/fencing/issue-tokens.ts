import type { Lock } from '../lock.js';
import type { Clock } from '../util/clock.js';
import { poll, type Ballot, type Tally } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import type { RedlockNode } from '../nodes/redlock-node.js';
import type { RestartQuarantine } from '../nodes/restart-quarantine.js';
import { FENCE_SCRIPT } from '../scripts/index.js';
import { counterValue, type FencingToken } from './tokens.js';

/**
 * Rounds of the token write-back before an acquire gives up (each extra
 * round only happens when a node already holds a higher counter than the
 * granting nodes showed, e.g. after an earlier acquire failed half-way).
 */
const MAX_FENCE_ROUNDS = 4;

/** What the fencing round needs of the instance (its context has it all). */
export interface FencingQuorum {
  readonly nodes: readonly RedlockNode[];
  readonly quorum: number;
  /** The quorum rule (see `quorumRule`). */
  readonly isDecided: (tally: Tally) => boolean;
  readonly clock: Clock;
  /** Nodes younger than `restartQuarantine` store tokens, but do not count. */
  readonly standing: Pick<RestartQuarantine, 'grant'>;
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
  ctx: FencingQuorum,
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
  for (let round = 1; round <= MAX_FENCE_ROUNDS; round++) {
    const args = proposal.map(String);
    const ballots = await poll(
      ctx.nodes,
      (node) => node.run(FENCE_SCRIPT, counterKeys, args),
      (reply, i) =>
        (reply as unknown[])[0] === 1
          ? ctx.standing.grant(i, counterKeys)
          : 'busy',
      nodeTimeout,
      ctx.isDecided,
      // Tokens stored once the lock's validity is over would fence nothing.
      { limitMs: lock.deadline - ctx.clock.now() },
    );
    if (ctx.clock.now() >= lock.deadline) return 'expired';
    if (countGranted(ballots) >= ctx.quorum) {
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

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
