export {
  InjectLockService,
  InjectRedlock,
} from './inject-lock-service.decorator.js';
export { Locked } from './locked.decorator.js';
export { LockKey } from './lock-key.decorator.js';
