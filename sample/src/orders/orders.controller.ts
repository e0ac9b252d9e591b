import { Body, Controller, Post, Query } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { CreateOrderDto } from './dto/create-order.dto.js';
import { OrderQueryDto } from './dto/order-query.dto.js';
import type { Order } from './order.repository.js';
import { OrdersService } from './orders.service.js';

/**
 * `POST /orders { items: [{ sku, qty }] }`: 201 with the order; 409 with
 * `code: 'OUT_OF_STOCK'` when the stock cannot cover it; 409 with `code: 'CONFLICT'`
 * (from `LockConflictFilter`) when a SKU stayed locked past the wait
 * timeout (503 when a quorum of Redis nodes does not answer); 400 for
 * invalid input.
 */
@Controller('orders')
export class OrdersController {
  constructor(
    private readonly config: AppConfig,
    private readonly orders: OrdersService,
  ) {}

  @Post()
  create(
    @Body() dto: CreateOrderDto,
    @Query() { locking }: OrderQueryDto,
  ): Promise<Order> {
    const useLock = locking ? locking === 'on' : this.config.locking;
    return useLock
      ? this.orders.placeOrder(dto)
      : this.orders.placeOrderUnlocked(dto);
  }
}
