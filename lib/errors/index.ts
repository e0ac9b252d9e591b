export * from './redlock.error.js';
export * from './redlock-config.error.js';
export type { NodeOutcome, NodeVote } from './node-vote.js';
export * from './lock-not-acquired.error.js';
export * from './lock-extend.error.js';
export * from './lock-lost.error.js';
export * from './lock-key.error.js';
export * from './lock-service-unavailable.error.js';
export * from './stale-fencing-token.error.js';
