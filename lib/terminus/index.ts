// `nestjs-redlock/terminus`: a health indicator for @nestjs/terminus (an
// optional peer: the main entry never loads it).
export {
  RedlockHealthIndicator,
  type RedlockHealthCheckOptions,
} from './redlock-health.indicator.js';
