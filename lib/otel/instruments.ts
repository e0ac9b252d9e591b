import type {
  Counter,
  Histogram,
  Meter,
  UpDownCounter,
} from '@opentelemetry/api';

/** The metrics of the lock, by OpenTelemetry instrument. */
export interface RedlockInstruments {
  /** `redlock.acquire.duration` (s): each acquire call, by `redlock.outcome`. */
  readonly acquireDuration: Histogram;
  /** `redlock.wait.duration` (s): from the call to the grant, for acquired locks. */
  readonly waitDuration: Histogram;
  /** `redlock.hold.duration` (s): from the grant to the release. */
  readonly holdDuration: Histogram;
  /** `redlock.locks.held`: locks granted and not released yet. */
  readonly held: UpDownCounter;
  /** `redlock.acquisitions`: acquire calls by `redlock.outcome`. */
  readonly acquisitions: Counter;
  /** `redlock.locks.lost`: held locks found lost. */
  readonly lost: Counter;
  /** `redlock.extensions.failed`: extensions that did not hold. */
  readonly extensionsFailed: Counter;
  /** `redlock.node.duration` (s): each node's answer to an acquire round, by `server.address`. */
  readonly nodeDuration: Histogram;
}

export function createInstruments(meter: Meter): RedlockInstruments {
  return {
    acquireDuration: meter.createHistogram('redlock.acquire.duration', {
      unit: 's',
      description: 'Duration of acquire calls, by outcome',
    }),
    waitDuration: meter.createHistogram('redlock.wait.duration', {
      unit: 's',
      description: 'Time from an acquire call to its grant',
    }),
    holdDuration: meter.createHistogram('redlock.hold.duration', {
      unit: 's',
      description: 'Time from a grant to its release',
    }),
    held: meter.createUpDownCounter('redlock.locks.held', {
      description: 'Locks granted and not released yet',
    }),
    acquisitions: meter.createCounter('redlock.acquisitions', {
      description: 'Acquire calls, by outcome',
    }),
    lost: meter.createCounter('redlock.locks.lost', {
      description: 'Held locks found lost',
    }),
    extensionsFailed: meter.createCounter('redlock.extensions.failed', {
      description: 'Lock extensions that did not hold',
    }),
    nodeDuration: meter.createHistogram('redlock.node.duration', {
      unit: 's',
      description: "Each node's answer time to an acquire round",
    }),
  };
}
