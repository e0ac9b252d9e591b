/** A waiting acquire's place in the nodes' wait queues (see WAIT_QUEUE_LUA). */
export interface QueuePlace {
  /** How long, in ms, the place lives unless an attempt renews it. */
  readonly life: number;
  /** When it first asked (wall clock ms), its rank on every node. */
  readonly arrival: number;
  /** Its name in the queues. */
  readonly name: string;
  /**
   * Per node, when the latest attempt that node answered was sent (see
   * `transferred`), recorded even for answers that came after the attempt
   * was decided.
   */
  readonly answeredAt: number[];
  /**
   * Per node, when the attempt of `answeredAt` was refused there, on that
   * node's clock (`undefined` when it granted): a key the node gave us
   * before then had expired (see `transferred`).
   */
  readonly refusedAt: (number | undefined)[];
}

/**
 * Keys given outright to a waiter by release messages: the nodes (bit i:
 * node i) and, per node, the latest grant's time on that node's clock.
 */
export interface GivenNotes {
  readonly bits: number;
  readonly at: readonly number[];
}

/** No key given. */
export const NONE_GIVEN: GivenNotes = { bits: 0, at: [] };
