import { RedlockError } from './redlock.error.js';

/**
 * A `@Locked` method was called on an object that has no `LockService`: an
 * instance made with `new` rather than by Nest, a call from the class's own
 * constructor, or a detached call (`const f = svc.method; f()`). The method
 * is not run: it never runs unlocked.
 *
 * @publicApi
 */
export class LockServiceUnavailableError extends RedlockError {
  constructor(
    /** The locked method, as `Class.method`. */
    readonly method: string,
    detached: boolean,
  ) {
    super(
      detached
        ? `@Locked ${method} was called without its instance as \`this\` (a detached call such as \`const f = svc.method; f()\`, \`setTimeout(svc.method)\` or \`list.map(svc.method)\`); call it as svc.method(...) or bind it. It was not run.`
        : `@Locked ${method} was called on an instance that has no LockService: it was created with \`new\` instead of by Nest, or called from its own constructor. Let Nest create it (a provider of a module under RedlockModule). It was not run.`,
    );
  }
}
