import { ConflictException } from '@nestjs/common';

/** One line of an order that cannot be served. */
export interface Shortage {
  sku: string;
  requested: number;
  available: number;
}

/**
 * 409 for an order the stock cannot cover. Its body carries
 * `code: 'OUT_OF_STOCK'` and the shortages, so clients tell it apart from the
 * lock-busy 409 of `LockConflictFilter` (which carries `resources` and `reason`).
 */
export class OutOfStockError extends ConflictException {
  constructor(readonly shortages: Shortage[]) {
    super({
      statusCode: 409,
      error: 'Conflict',
      code: 'OUT_OF_STOCK',
      message: `Out of stock: ${shortages
        .map(
          (s) =>
            `${s.sku} (requested ${s.requested}, available ${s.available})`,
        )
        .join(', ')}`,
      shortages,
    });
  }
}
