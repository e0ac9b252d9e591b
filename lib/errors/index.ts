export * from './redlock.error.js';
export * from './redlock-config.error.js';
export * from './node-vote.js';
export * from './lock-not-acquired.error.js';
export * from './lock-extend.error.js';
export * from './lock-lost.error.js';
export * from './stale-fencing-token.error.js';
