import type { LockService } from '../lock.service.js';

/** What one `RedlockModule` import registers, as its explorer sees it. */
export interface LockSet {
  /** Its name; `undefined` for the default set. */
  readonly name: string | undefined;
  readonly service: LockService;
}
