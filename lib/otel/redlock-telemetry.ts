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
    }),
    (a) => {
      const outcome = outcomeOf(a);
      const seconds = (a.waitMs ?? 0) / 1000;
      m.acquireDuration.record(seconds, { 'redlock.outcome': outcome });
      m.acquisitions.add(1, { 'redlock.outcome': outcome });
      if (outcome === 'acquired') {
        m.waitDuration.record(seconds);
        m.held.add(1);
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
      m.held.add(-1);
      if (r.holdMs !== undefined) m.holdDuration.record(r.holdMs / 1000);
      return {
        'redlock.resources': [...r.resources],
        ...(r.holdMs === undefined ? {} : { 'redlock.hold_ms': r.holdMs }),
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
    }),
    (e) => {
      if (e.error !== undefined) m.extensionsFailed.add(1);
      return e.validityMs === undefined
        ? {}
        : { 'redlock.validity_ms': e.validityMs };
    },
  );
  traced<FenceMessage>(
    REDLOCK_CHANNELS.fence,
    'redlock.fence',
    (f) => ({ 'redlock.resources': [...f.resources] }),
    (f) => ({
      ...(f.failure ? { 'redlock.failure': f.failure } : {}),
      ...(f.fencingTokens
        ? { 'redlock.fencing_tokens': tokenList(f.fencingTokens) }
        : {}),
    }),
  );
  plain<LostMessage>(REDLOCK_CHANNELS.lost, () => m.lost.add(1));
  plain<AttemptMessage>(REDLOCK_CHANNELS.attempt, (a) =>
    a.latenciesMs.forEach((ms, i) => {
      if (ms !== undefined)
        m.nodeDuration.record(ms / 1000, { 'server.address': a.nodes[i].node });
    }),
  );
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

/** Fencing tokens as span attribute values: `resource=token`. */
function tokenList(tokens: Readonly<Record<string, string>>): string[] {
  return Object.entries(tokens).map(
    ([resource, token]) => `${resource}=${token}`,
  );
}
