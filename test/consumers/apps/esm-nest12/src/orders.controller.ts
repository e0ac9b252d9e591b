import { Controller, Get, Param, Post } from '@nestjs/common';
import { LockService } from 'nestjs-redlock';
import { OrdersService } from './orders.service.js';

@Controller('orders')
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly locks: LockService,
  ) {}

  @Post(':id/increment')
  async increment(@Param('id') id: string) {
    return { id, count: await this.orders.increment(id) };
  }

  @Post(':id/increment-unlocked')
  async incrementUnlocked(@Param('id') id: string) {
    return { id, count: await this.orders.incrementUnlocked(id) };
  }

  @Get(':id/snapshot')
  snapshot(@Param('id') id: string) {
    return this.orders.snapshot(id);
  }

  /** The count, and whether a quorum of nodes hold the order's lock. */
  @Get(':id')
  async show(@Param('id') id: string) {
    const inspection = await this.locks.inspect(`order:${id}`);
    return {
      id,
      count: await this.orders.count(id),
      locked: inspection.held,
      key: inspection.key,
    };
  }
}
