import type { Redis } from 'ioredis';
import { parseToken } from '../core/fencing.js';
import type { Lock } from '../core/lock.js';
import { runScript } from '../core/scripts/lua-script.js';
import { show } from '../core/timing.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { StaleFencingTokenError } from '../errors/stale-fencing-token.error.js';
import { FENCED_WRITE_SCRIPT } from './fenced-write.script.js';

/**
 * The token a write is made with, and the resource it was issued for.
 *
 * @publicApi
 */
export interface Fence {
  readonly resource: string;
  readonly token: string;
}

/**
 * One Redis command on one key, run by a guarded write:
 * `['SET', 'stock:sku-1', 4]`, `['HSET', 'order:7', 'status', 'paid']`,
 * `['RPUSH', 'orders', '7']`.
 *
 * @publicApi
 */
export type FencedCommand = readonly [
  command: string,
  key: string,
  ...args: (string | number | Buffer)[],
];

/**
 * Options of a {@link FencedStore}.
 *
 * @publicApi
 */
export interface FencedStoreOptions {
  /**
   * Prefix of the records holding the highest token accepted per resource
   * (`<prefix><resource>`; they have no expiry). Default `redlock:fenced:`.
   */
  prefix?: string;
}

/**
 * Writes to data kept in Redis that only a current lock holder may make.
 * Every write carries the fencing token of the lock it is made under; the
 * store applies it only if the token is at least the highest it has already
 * accepted for the resource, records it, and otherwise rejects the write
 * with {@link StaleFencingTokenError} without applying any of it. A holder
 * paused past its lease therefore cannot overwrite what a newer holder wrote.
 *
 * ```ts
 * const store = new FencedStore(redis);
 * await lockService.run(`sku:${sku}`, async (lock) => {
 *   // Read through the store: a late write of an older holder is then refused.
 *   const stock = Number(await store.get(lock, `stock:${sku}`));
 *   if (stock < 1) throw new OutOfStockError(sku);
 *   await store.exec(lock, [
 *     ['SET', `stock:${sku}`, stock - 1],
 *     ['RPUSH', `orders:${sku}`, orderId],
 *   ]);
 * }, { fencing: true });
 * ```
 *
 * The client is borrowed (never closed). The data and the fence records
 * must live on the same Redis (not necessarily one of the lock nodes).
 *
 * @publicApi
 */
export class FencedStore {
  readonly prefix: string;

  constructor(
    readonly client: Redis,
    options: FencedStoreOptions = {},
  ) {
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof (client as Partial<Redis>).evalsha !== 'function'
    ) {
      throw new RedlockConfigError(
        'client',
        `must be an ioredis client, got ${show(client)}`,
      );
    }
    const prefix = options.prefix ?? 'redlock:fenced:';
    if (typeof prefix !== 'string')
      throw new RedlockConfigError(
        'prefix',
        `must be a string, got ${show(prefix)}`,
      );
    this.prefix = prefix;
  }

  /** The key of the record holding the highest token accepted for `resource`. */
  fenceKey(resource: string): string {
    return this.prefix + resource;
  }

  /**
   * Runs `commands` in order, atomically with the token check, and resolves
   * with their replies. Rejects with {@link StaleFencingTokenError} (nothing
   * applied) when a newer token was accepted for the resource. Reads count
   * too: `['GET', key]` in the list records the token like a write does.
   *
   * `fence` is a single-resource lock acquired with `fencing: true`, or
   * `{ resource, token }` (for a lock on several resources:
   * `fenceOf(lock, resource)`).
   */
  async exec(
    fence: Fence | Lock,
    commands: readonly FencedCommand[],
  ): Promise<unknown[]> {
    if (Array.isArray(commands) && commands.length === 0)
      throw new RedlockConfigError(
        'commands',
        'must list at least one [command, key, ...args] (use claim() to only record the token)',
      );
    return this.apply(fence, commands);
  }

  /**
   * Records the token without writing anything, or rejects with
   * {@link StaleFencingTokenError}. Call it (or read through {@link get}) at
   * the start of a read-modify-write: once a new holder has claimed, an older
   * holder's late write is refused even if it lands before the new holder's
   * own write, so the new holder never writes from a value the old one
   * changed under it.
   */
  async claim(fence: Fence | Lock): Promise<void> {
    await this.apply(fence, []);
  }

  /** Guarded read: `GET key`, recording the token (see {@link claim}). */
  async get(fence: Fence | Lock, key: string): Promise<string | null> {
    const [value] = await this.exec(fence, [['GET', key]]);
    return (value as string | null) ?? null;
  }

  private async apply(
    fence: Fence | Lock,
    commands: readonly FencedCommand[],
  ): Promise<unknown[]> {
    const { resource, token } = resolveFence(fence);
    const keys = [this.fenceKey(resource)];
    const args: (string | number | Buffer)[] = [token, 0];
    if (!Array.isArray(commands)) {
      throw new RedlockConfigError(
        'commands',
        `must be a non-empty array of [command, key, ...args], got ${show(commands)}`,
      );
    }
    commands.forEach((command: unknown, i) => {
      const field = `commands[${i}]`;
      if (!Array.isArray(command) || command.length < 2)
        throw new RedlockConfigError(
          field,
          `must be [command, key, ...args], got ${show(command)}`,
        );
      const [name, key, ...rest] = command as unknown[];
      if (typeof name !== 'string' || name.length === 0)
        throw new RedlockConfigError(
          `${field}[0]`,
          `must be a command name, got ${show(name)}`,
        );
      if (typeof key !== 'string' || key.length === 0)
        throw new RedlockConfigError(
          `${field}[1]`,
          `must be a key, got ${show(key)}`,
        );
      rest.forEach((arg, j) => {
        if (
          typeof arg !== 'string' &&
          !(typeof arg === 'number' && Number.isFinite(arg)) &&
          !Buffer.isBuffer(arg)
        )
          throw new RedlockConfigError(
            `${field}[${j + 2}]`,
            `must be a string, a finite number or a Buffer, got ${show(arg)}`,
          );
      });
      keys.push(key);
      args.push(name, rest.length, ...(rest as (string | number | Buffer)[]));
    });
    args[1] = commands.length;
    const reply = (await runScript(
      this.client,
      FENCED_WRITE_SCRIPT,
      keys,
      args,
    )) as [number, unknown];
    if (reply[0] !== 1)
      throw new StaleFencingTokenError(resource, token, String(reply[1]));
    return reply[1] as unknown[];
  }

  /** Guarded `SET key value`. */
  async set(
    fence: Fence | Lock,
    key: string,
    value: string | number | Buffer,
  ): Promise<void> {
    await this.exec(fence, [['SET', key, value]]);
  }

  /** Guarded `HSET key field value ...`; resolves with the number of fields added. */
  async hset(
    fence: Fence | Lock,
    key: string,
    fields: Readonly<Record<string, string | number>>,
  ): Promise<number> {
    const pairs = Object.entries(fields ?? {}).flat();
    if (pairs.length === 0)
      throw new RedlockConfigError(
        'fields',
        `must have at least one field, got ${show(fields)}`,
      );
    const [added] = await this.exec(fence, [['HSET', key, ...pairs]]);
    return added as number;
  }

  /** Guarded `INCRBY key delta` (negative to decrement); resolves with the new value. */
  async incrby(
    fence: Fence | Lock,
    key: string,
    delta: number,
  ): Promise<number> {
    if (!Number.isSafeInteger(delta))
      throw new RedlockConfigError(
        'delta',
        `must be a safe integer, got ${show(delta)}`,
      );
    const [value] = await this.exec(fence, [['INCRBY', key, delta]]);
    return value as number;
  }

  /** Guarded `DEL key ...`; resolves with the number of keys deleted. */
  async del(fence: Fence | Lock, ...keys: string[]): Promise<number> {
    const replies = await this.exec(
      fence,
      keys.map((key) => ['DEL', key] as const),
    );
    return replies.reduce<number>((sum, n) => sum + (n as number), 0);
  }

  /** The highest token accepted so far for `resource`, or `null` if none. */
  async highest(resource: string): Promise<string | null> {
    checkResource(resource);
    return this.client.get(this.fenceKey(resource));
  }
}

/**
 * The fence of a lock acquired with `fencing: true`: its resource and token
 * (`resource` is required when the lock holds several).
 *
 * @publicApi
 */
export function fenceOf(lock: Lock, resource?: string): Fence {
  if (
    typeof lock !== 'object' ||
    lock === null ||
    !Array.isArray(lock.resources)
  )
    throw new RedlockConfigError('lock', `must be a Lock, got ${show(lock)}`);
  if (!lock.fencingTokens)
    throw new RedlockConfigError(
      'lock',
      `has no fencing token: acquire it with { fencing: true } (or set fencing: true in the module options)`,
    );
  const listed = lock.resources.map((r) => `"${r}"`).join(', ');
  if (resource === undefined && lock.resources.length !== 1)
    throw new RedlockConfigError(
      'resource',
      `is required for a lock on several resources (${listed})`,
    );
  const name = resource ?? lock.resources[0];
  const token = lock.fencingTokens.get(name);
  if (token === undefined)
    throw new RedlockConfigError(
      'resource',
      `${show(name)} is not one of the lock's resources (${listed})`,
    );
  return { resource: name, token };
}

function resolveFence(fence: Fence | Lock): Fence {
  if (typeof fence !== 'object' || fence === null)
    throw new RedlockConfigError(
      'fence',
      `must be a Lock acquired with { fencing: true } or { resource, token }, got ${show(fence)}`,
    );
  if ('signal' in fence && 'resources' in fence) return fenceOf(fence);
  const { resource, token } = fence;
  checkResource(resource, 'fence.resource');
  parseToken('fence.token', token);
  return { resource, token };
}

function checkResource(resource: unknown, field = 'resource'): void {
  if (typeof resource !== 'string' || resource.length === 0)
    throw new RedlockConfigError(
      field,
      `must be a non-empty string, got ${show(resource)}`,
    );
}
