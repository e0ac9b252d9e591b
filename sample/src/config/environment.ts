import { plainToInstance } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Min,
  validateSync,
} from 'class-validator';

/**
 * The environment the sample reads, checked once at start by
 * `ConfigModule.forRoot({ validate })`: a typo fails the boot with the
 * variable's name rather than a lock on the wrong nodes.
 */
export class Environment {
  /** Comma-separated Redis masters for the locks (1 or 5, ...). */
  @Matches(/^\s*rediss?:\/\/[^,\s]+(\s*,\s*rediss?:\/\/[^,\s]+)*\s*$/, {
    message: 'REDIS_URLS must be comma-separated redis:// or rediss:// URLs',
  })
  REDIS_URLS: string = 'redis://127.0.0.1:6379';

  /** Where stock and orders live. Default: the first of `REDIS_URLS`. */
  @IsOptional()
  @IsString()
  STOCK_REDIS_URL?: string;

  /** Prefix of every key the app writes (stock, orders, locks). */
  @IsString()
  KEY_PREFIX: string = '';

  /** `off` runs orders without the lock (for comparison). */
  @IsIn(['on', 'off'])
  LOCKING: string = 'on';

  /** Pause between reading the stock and writing it back, in ms. */
  @IsInt()
  @Min(0)
  CHECK_WRITE_GAP_MS: number = 5;

  /** How long an order waits for a busy SKU, in ms. */
  @IsInt()
  @Min(0)
  LOCK_WAIT_TIMEOUT_MS: number = 15_000;

  /** How long one call to the payment provider takes, in ms. */
  @IsInt()
  @Min(0)
  PSP_LATENCY_MS: number = 20;

  /** Pause between two items' updates when the catalogue is repriced, in ms. */
  @IsInt()
  @Min(0)
  REPRICE_GAP_MS: number = 2;

  @IsInt()
  @Min(0)
  PORT: number = 3000;

  @IsString()
  HOST: string = '127.0.0.1';
}

/** `ConfigModule`'s `validate`: the typed environment, defaults filled in, or an error naming each variable at fault. */
export function validate(env: Record<string, unknown>): Environment {
  const parsed = plainToInstance(Environment, env, {
    enableImplicitConversion: true,
    exposeDefaultValues: true,
  });
  const errors = validateSync(parsed);
  if (errors.length > 0)
    throw new Error(
      `Invalid environment: ${errors
        .flatMap((e) => Object.values(e.constraints ?? {}))
        .join('; ')}`,
    );
  return parsed;
}

/** `a, b,c` → `['a', 'b', 'c']`: URLs split from one variable, trimmed. */
export function splitUrls(list: string): string[] {
  return list
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
}
