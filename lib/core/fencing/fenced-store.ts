import type { Redis } from 'ioredis';
import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { StaleFencingTokenError } from '../../errors/stale-fencing-token.error.js';
import type { Lock } from '../lock.js';
import { FENCED_WRITE_SCRIPT } from '../scripts/fenced-write.script.js';
import { runScript } from '../scripts/lua-script.js';
import { show } from '../util/validate.js';
import { checkResource, resolveFence, type Fence } from './fence.js';
import { encodeCommands, type FencedCommand } from './fenced-command.js';

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
    encodeCommands(commands, keys, args);
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
