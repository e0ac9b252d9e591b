import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { AppConfig } from '../config/app-config.js';
import { StockRepository } from '../stock/stock.repository.js';
import type { CreateOrderDto } from './dto/create-order.dto.js';
import { OutOfStockError } from './errors/out-of-stock.error.js';
import { OrderRepository, type Order } from './order.repository.js';

/**
 * Places orders against the stock in Redis: read the levels, check them,
 * (a few ms pass: payment, pricing, ...), write the decremented levels,
 * record the order. Two requests for the same SKU that interleave between
 * the read and the write both pass the check and both sell the same units.
 */
@Injectable()
export class OrdersService {
  constructor(
    private readonly config: AppConfig,
    private readonly stock: StockRepository,
    private readonly orders: OrderRepository,
  ) {}

  /**
   * Locks every SKU of the order (one resource per item, all or nothing)
   * for the whole check-and-write, so no other order or restock of those
   * SKUs runs in between.
   */
  @Locked('sku:<dto.items.*.sku>', { fencing: true })
  placeOrder(dto: CreateOrderDto): Promise<Order> {
    return this.fulfil(dto, true);
  }

  /** The very same flow without the lock, to show what the lock prevents. */
  placeOrderUnlocked(dto: CreateOrderDto): Promise<Order> {
    return this.fulfil(dto, false);
  }

  private async fulfil(dto: CreateOrderDto, locked: boolean): Promise<Order> {
    const wanted = totalsBySku(dto);
    const levels = await this.stock.read([...wanted.keys()]);
    const shortages = [...wanted]
      .map(([sku, requested]) => ({
        sku,
        requested,
        available: levels.get(sku) ?? 0,
      }))
      .filter((line) => line.available < line.requested);
    if (shortages.length > 0) throw new OutOfStockError(shortages);

    // The gap between check and write where a concurrent order slips in.
    if (this.config.checkWriteGapMs > 0)
      await sleep(this.config.checkWriteGapMs);

    await this.stock.write(
      new Map(
        [...wanted].map(([sku, qty]) => [sku, (levels.get(sku) ?? 0) - qty]),
      ),
    );
    return this.orders.record(
      [...wanted].map(([sku, qty]) => ({ sku, qty })),
      locked,
    );
  }
}

/** Merges lines of the same SKU: `[{a,1},{a,2}]` is one line `{a,3}`. */
function totalsBySku(dto: CreateOrderDto): Map<string, number> {
  const totals = new Map<string, number>();
  for (const { sku, qty } of dto.items)
    totals.set(sku, (totals.get(sku) ?? 0) + qty);
  return totals;
}
