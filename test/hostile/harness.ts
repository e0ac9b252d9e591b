import { afterAll, afterEach, beforeAll, expect } from '@jest/globals';
import type { Redis } from 'ioredis';
import {
  isRedlockError,
  type Redlock,
  type RedlockError,
} from 'nestjs-redlock';
import { scanKeys } from '../../scripts/redis-nodes.mjs';
import { flushed } from '../utils/nodes.js';

/**
 * The process jest runs in. A test sees a copy of `process` (jest's
 * sandbox) that never emits `unhandledRejection`; a function built by a
 * timer's own `Function` constructor runs in the outer realm and returns
 * the real one.
 */
export const realProcess = (
  setTimeout.constructor('return process') as () => NodeJS.Process
)();

/** How one call ended, or that it did not end within its bound. */
export type Outcome =
  | { status: 'fulfilled'; value: unknown; ms: number }
  | { status: 'rejected'; error: unknown; ms: number };

/**
 * Runs `fn` (a synchronous throw counts as a rejection) and resolves with
 * how it settled; fails the test if it has not settled after `ms`: no
 * hostile input may hang a call.
 */
export async function settle(fn: () => unknown, ms = 5000): Promise<Outcome> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), ms);
  });
  const run = Promise.resolve()
    .then(fn)
    .then(
      (value): Outcome => ({
        status: 'fulfilled',
        value,
        ms: performance.now() - start,
      }),
      (error: unknown): Outcome => ({
        status: 'rejected',
        error,
        ms: performance.now() - start,
      }),
    );
  const result = await Promise.race([run, hung]);
  clearTimeout(timer);
  if (result === 'hung') throw new Error(`hung: not settled after ${ms} ms`);
  return result;
}

/** The value of a fulfilled outcome; fails the test with the error otherwise. */
export function fulfilled(outcome: Outcome): unknown {
  if (outcome.status === 'rejected') throw outcome.error;
  return outcome.value;
}

/**
 * The library error of a rejected outcome, checked to be of class `name`
 * (by the brand, as `isRedlockError`), and, for a `RedlockConfigError`,
 * to name `field`.
 */
export function typed<E extends RedlockError = RedlockError>(
  outcome: Outcome,
  name: string,
  field?: string,
): E {
  if (outcome.status === 'fulfilled')
    throw new Error(`expected ${name}, got a value: ${String(outcome.value)}`);
  const error = outcome.error;
  if (!isRedlockError(error, name)) throw error;
  if (field !== undefined)
    expect((error as unknown as { field: string }).field).toBe(field);
  return error as E;
}

/**
 * Collects every unhandled rejection of the real process while a spec
 * runs, and fails each test after which one arrived (a turn of the event
 * loop is given for late ones).
 */
export function noUnhandledRejections(): void {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  beforeAll(() => {
    realProcess.on('unhandledRejection', listener);
  });
  afterEach(async () => {
    await new Promise((resolve) => setImmediate(resolve));
    const found = seen.splice(0);
    expect(found.map(String)).toEqual([]);
  });
  afterAll(() => {
    realProcess.off('unhandledRejection', listener);
  });
}

/**
 * Keys left under `prefixes` on the nodes, except those under `kept`:
 * fencing counters (`<metaPrefix>fence:`) and a FencedStore's records are
 * kept on purpose (docs/fencing.md); anything else a case leaves is a leak.
 * Looks once every node answered what the open instances of `after` sent:
 * a release settles when a quorum confirmed it, and the other nodes may
 * still be working through it.
 */
export async function leftovers(
  after: readonly Redlock[],
  nodes: readonly Redis[],
  prefixes: readonly string[],
  kept: readonly string[] = [],
): Promise<string[]> {
  for (const redlock of after) if (!redlock.isClosed) await flushed(redlock);
  const found: string[] = [];
  for (const node of nodes)
    for (const prefix of prefixes)
      for (const key of await scanKeys(node, `${prefix}*`))
        if (!kept.some((k) => key.startsWith(k))) found.push(short(key));
  return found;
}

/** A key shortened for a test failure message (some are 1 MB). */
function short(key: string): string {
  return key.length > 80 ? `${key.slice(0, 60)}…(${key.length} chars)` : key;
}

export const sleep = (ms: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, ms));
