/** One waiting acquire, as the listener sees it. */
export interface Listening {
  /** The keys it waits for. */
  readonly keys: readonly string[];
  /** The waiter's lock value (the release message may name it). */
  readonly value: string | undefined;
  /** The current wait's callback; none between the waits of an expected value (see `expect`). */
  wake?: () => void;
  /** Nodes that announced a release to this waiter (bit i: node i). */
  heard: number;
  /**
   * Also woken by a message naming a value nobody here listens for (a
   * read/write lock's waiter: the acquire it names gave up, and this one
   * may go instead).
   */
  readonly orAny?: boolean;
  /** Wakes the waiter a little after the first announcement (see `deliver`). */
  timer?: NodeJS.Timeout;
}

/**
 * After the first node's announcement, how long to wait for a quorum of
 * them before trying anyway (a node may name another waiter, or be down).
 */
export const QUORUM_GRACE_MS = 5;
