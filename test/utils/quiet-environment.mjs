// The tests' environment: Node's, with the console of each test held back
// and shown only when the test fails. Library warnings (the default logger
// writes to the console) and figures tests print would otherwise fill a
// passing run with thousands of lines; a failing test shows what it
// logged, before jest's report of the failure.
import { TestEnvironment } from 'jest-environment-node';

const LEVELS = ['log', 'info', 'warn', 'error', 'debug'];

export default class QuietEnvironment extends TestEnvironment {
  /** Console calls since the last test ended: [level, args]. */
  held = [];

  async setup() {
    await super.setup();
    const console = this.global.console;
    this.originals = {};
    for (const level of LEVELS) {
      this.originals[level] = console[level].bind(console);
      console[level] = (...args) => {
        // A bound on what one test can hold, should it log in a loop.
        if (this.held.length < 2000) this.held.push([level, args]);
        else if (this.held.length === 2000)
          this.held.push(['warn', ['(more console output left out)']]);
      };
    }
  }

  async handleTestEvent(event) {
    if (event.name !== 'test_done') return;
    if (event.test.errors.length > 0)
      for (const [level, args] of this.held) this.originals[level](...args);
    this.held = [];
  }
}
