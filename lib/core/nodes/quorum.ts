import type { Ballot, Tally } from './poll.js';

/**
 * The quorum rule of a poll: settled once `quorum` nodes granted, or once
 * so many refused or failed that `quorum` grants are out of reach.
 */
export function quorumRule(quorum: number): (tally: Tally) => boolean {
  return (t) => t.granted >= quorum || t.granted + t.pending < quorum;
}

/** How many nodes granted, of a poll's ballots. */
export function countGranted(ballots: readonly Ballot[]): number {
  let granted = 0;
  for (const b of ballots) if (b.outcome === 'granted') granted++;
  return granted;
}
