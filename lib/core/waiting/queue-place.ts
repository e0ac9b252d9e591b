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
}
