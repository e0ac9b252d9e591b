import {
  context,
  metrics,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type MeterProvider,
  type Span,
  type TracerProvider,
} from '@opentelemetry/api';
import {
  subscribe,
  tracingChannel,
  unsubscribe,
} from 'node:diagnostics_channel';
import {
  REDLOCK_CHANNELS,
  type LockShape,
  type AcquireMessage,
  type AttemptMessage,
  type ExtendMessage,
  type FenceMessage,
  type LostMessage,
  type ReleaseMessage,
} from '../core/events/channels.js';
import { createInstruments } from './instruments.js';

/**
 * Options of {@link enableRedlockTelemetry}.
 *
 * @publicApi
 */
export interface RedlockTelemetryOptions {
  /** Where spans go. Default: the global tracer provider (`trace.setGlobalTracerProvider`). */
  tracerProvider?: TracerProvider;
  /** Where metrics go. Default: the global meter provider. */
  meterProvider?: MeterProvider;
}

const SCOPE = 'nestjs-redlock';
// Both spellings of the database system: `db.system` (older semantic
// conventions, still read by most backends) and `db.system.name`.
const BASE: Attributes = { 'db.system': 'redis', 'db.system.name': 'redis' };

type Traced = { error?: unknown; valueHash?: string };

/**
 * Turns the lock events (see `REDLOCK_CHANNELS`) into OpenTelemetry spans
 * and metrics; returns the function that turns them off. Spans
 * `redlock.acquire`, `redlock.extend`, `redlock.release` and
 * `redlock.fence` are children of the span active when the call was made
 * (the request's); metrics are listed in docs/observability.md.
 * `@opentelemetry/api` is an optional peer: only this entry point
 * (`nestjs-redlock/otel`) loads it.
 *
 * ```ts
 * import { enableRedlockTelemetry } from 'nestjs-redlock/otel';
 * enableRedlockTelemetry(); // after the OpenTelemetry SDK started
 * ```
 *
 * @publicApi
 */
export function enableRedlockTelemetry(
  options: RedlockTelemetryOptions = {},
): () => void {
  const tracer = (
    options.tracerProvider ?? trace.getTracerProvider()
  ).getTracer(SCOPE);
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(
    SCOPE,
  );
  const m = createInstruments(meter);
  const spans = new WeakMap<object, Span>();
  const stops: (() => void)[] = [];

  /** Subscribes a tracing channel whose operation becomes the span `name`. */
  const traced = <M extends Traced>(
    channel: string,
    name: string,
    started: (message: M) => Attributes,
    ended: (message: M) => Attributes,
  ) => {
    const handlers = {
      start(message: unknown) {
        const span = tracer.startSpan(
          name,
          {
            kind: SpanKind.INTERNAL,
            attributes: {
              ...BASE,
              'db.operation.name': name,
              ...started(message as M),
            },
          },
          context.active(),
        );
        spans.set(message as object, span);
      },
      end() {},
      asyncStart() {},
      asyncEnd(message: unknown) {
        const span = spans.get(message as object);
        if (!span) return;
        spans.delete(message as object);
        const m = message as M;
        span.setAttributes(ended(m));
        if (m.valueHash) span.setAttribute('redlock.value_hash', m.valueHash);
        if (m.error !== undefined) {
          const error =
            m.error instanceof Error
              ? m.error
              : new Error(JSON.stringify(m.error) ?? 'undefined');
          span.recordException(error);
          span.setAttribute('error.type', error.name);
          span.setStatus({
            code: SpanStatusCode.ERROR,
            message: error.message,
          });
        }
        span.end();
      },
      error() {},
    };
    const tc = tracingChannel(channel);
    tc.subscribe(handlers);
    stops.push(() => tc.unsubscribe(handlers));
  };
  const plain = <M>(channel: string, handler: (message: M) => void) => {
    const listener = (message: unknown) => handler(message as M);
    subscribe(channel, listener);
    stops.push(() => unsubscribe(channel, listener));
  };

  traced<AcquireMessage>(
    REDLOCK_CHANNELS.acquire,
    'redlock.acquire',
    (a) => ({
      'redlock.resources': [...a.resources],
      'redlock.call': a.call,
      'redlock.ttl_ms': a.ttl,
      'redlock.wait_timeout_ms': a.waitTimeout,
      'redlock.fencing': a.fencing,
      ...shapeAttributes(a),
    }),
    (a) => {
      const outcome = outcomeOf(a);
      const seconds = (a.waitMs ?? 0) / 1000;
      const shape = shapeAttributes(a);
      const byOutcome = { 'redlock.outcome': outcome, ...shape };
      m.acquireDuration.record(seconds, byOutcome);
      m.acquisitions.add(1, byOutcome);
      if (outcome === 'acquired') {
        m.waitDuration.record(seconds, shape);
        m.held.add(1, shape);
      }
      return {
        'redlock.outcome': outcome,
        'redlock.attempts': a.attempts ?? 0,
        'redlock.wait_ms': a.waitMs ?? 0,
        ...(a.validityMs === undefined
          ? {}
          : { 'redlock.validity_ms': a.validityMs }),
        ...(a.fencingTokens
          ? { 'redlock.fencing_tokens': tokenList(a.fencingTokens) }
          : {}),
        'redlock.nodes': (a.nodes ?? []).map((n) => `${n.node} ${n.outcome}`),
      };
    },
  );
  traced<ReleaseMessage>(
    REDLOCK_CHANNELS.release,
    'redlock.release',
    (r) => {
      const shape = shapeAttributes(r);
      m.held.add(-1, shape);
      if (r.holdMs !== undefined) m.holdDuration.record(r.holdMs / 1000, shape);
      return {
        'redlock.resources': [...r.resources],
        ...(r.holdMs === undefined ? {} : { 'redlock.hold_ms': r.holdMs }),
        ...shape,
      };
    },
    (r) =>
      r.result
        ? {
            'redlock.released': r.result.released,
            'redlock.expired': r.result.expired,
            'redlock.handed_over': r.result.handedOver ?? false,
          }
        : {},
  );
  traced<ExtendMessage>(
    REDLOCK_CHANNELS.extend,
    'redlock.extend',
    (e) => ({
      'redlock.resources': [...e.resources],
      ...(e.ttl === undefined ? {} : { 'redlock.ttl_ms': e.ttl }),
      ...shapeAttributes(e),
    }),
    (e) => {
      if (e.error !== undefined) m.extensionsFailed.add(1, shapeAttributes(e));
      return e.validityMs === undefined
        ? {}
        : { 'redlock.validity_ms': e.validityMs };
    },
  );
  traced<FenceMessage>(
    REDLOCK_CHANNELS.fence,
    'redlock.fence',
    (f) => ({ 'redlock.resources': [...f.resources], ...shapeAttributes(f) }),
    (f) => ({
      ...(f.failure ? { 'redlock.failure': f.failure } : {}),
      ...(f.fencingTokens
        ? { 'redlock.fencing_tokens': tokenList(f.fencingTokens) }
        : {}),
    }),
  );
  plain<LostMessage>(REDLOCK_CHANNELS.lost, (l) =>
    m.lost.add(1, shapeAttributes(l)),
  );
  plain<AttemptMessage>(REDLOCK_CHANNELS.attempt, (a) => {
    const shape = shapeAttributes(a);
    a.latenciesMs.forEach((ms, i) => {
      if (ms !== undefined)
        m.nodeDuration.record(ms / 1000, {
          'server.address': a.nodes[i].node,
          ...shape,
        });
    });
  });
  return () => {
    for (const stop of stops.splice(0)) stop();
  };
}

/** What became of an acquire call, for the `redlock.outcome` attribute. */
function outcomeOf(message: AcquireMessage): string {
  const error = message.error as { name?: string; reason?: string } | undefined;
  if (error === undefined) return message.valueHash ? 'acquired' : 'busy';
  if (error.name === 'LockNotAcquiredError') return error.reason ?? 'busy';
  if (error.name === 'AbortError') return 'aborted';
  return 'error';
}

/**
 * A lock's shape as attributes: `redlock.permits` for a semaphore's
 * permit, `redlock.mode` for a side of a read/write lock; none for a
 * mutex (its spans and metrics keep the attributes they had).
 */
function shapeAttributes(shape: LockShape): Attributes {
  if (shape.permits === undefined && shape.mode === undefined) return {};
  return {
    ...(shape.permits === undefined
      ? {}
      : { 'redlock.permits': shape.permits }),
    ...(shape.mode === undefined ? {} : { 'redlock.mode': shape.mode }),
  };
}

/** Fencing tokens as span attribute values: `resource=token`. */
function tokenList(tokens: Readonly<Record<string, string>>): string[] {
  return Object.entries(tokens).map(
    ([resource, token]) => `${resource}=${token}`,
  );
}
