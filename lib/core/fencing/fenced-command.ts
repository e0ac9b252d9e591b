import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { show } from '../util/validate.js';

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
 * Checks `commands`, naming the entry at fault, and appends them to a
 * fenced write's keys and arguments: each command's key to `keys`, and its
 * name, argument count and arguments to `args`, whose second entry becomes
 * the command count (see the fenced-write script).
 */
export function encodeCommands(
  commands: unknown,
  keys: string[],
  args: (string | number | Buffer)[],
): void {
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
}
