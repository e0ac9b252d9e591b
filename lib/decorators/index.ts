export { Locked } from './locked.decorator.js';
export { LockKey } from './lock-key.decorator.js';
