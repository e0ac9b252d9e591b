// `nestjs-redlock/otel`: OpenTelemetry spans and metrics from the lock
// events (`@opentelemetry/api` is an optional peer: the main entry never
// loads it).
export {
  enableRedlockTelemetry,
  type RedlockTelemetryOptions,
} from './redlock-telemetry.js';
