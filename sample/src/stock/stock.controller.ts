import { Body, Controller, Get, Param, Post, Put } from '@nestjs/common';
import { LockService } from 'nestjs-redlock';
import { RestockDto } from './dto/restock.dto.js';
import { SetStockDto } from './dto/set-stock.dto.js';
import { SkuParamDto } from './dto/sku-param.dto.js';
import { StockRepository, skuResource } from './stock.repository.js';

/** What the stock endpoints answer. */
export interface StockLevel {
  sku: string;
  quantity: number;
}

/**
 * Stock administration. Writes take the same `sku:<sku>` lock as orders
 * (see `OrdersService.placeOrder`), here through `LockService.run()`
 * directly: a restock never interleaves with an order's check and write.
 */
@Controller('stock')
export class StockController {
  constructor(
    private readonly locks: LockService,
    private readonly stock: StockRepository,
  ) {}

  @Get(':sku')
  async get(@Param() { sku }: SkuParamDto): Promise<StockLevel> {
    const levels = await this.stock.read([sku]);
    return { sku, quantity: levels.get(sku) ?? 0 };
  }

  /** Sets the level outright (seeding, inventory counts). */
  @Put(':sku')
  set(
    @Param() { sku }: SkuParamDto,
    @Body() { quantity }: SetStockDto,
  ): Promise<StockLevel> {
    return this.locks.run(
      skuResource(sku),
      async () => {
        await this.stock.write(new Map([[sku, quantity]]));
        return { sku, quantity };
      },
      { fencing: true },
    );
  }

  /** Adds `qty` units: a read-modify-write, so it runs under the SKU's lock. */
  @Post(':sku/restock')
  restock(
    @Param() { sku }: SkuParamDto,
    @Body() { qty }: RestockDto,
  ): Promise<StockLevel> {
    return this.locks.run(
      skuResource(sku),
      async () => {
        const current = (await this.stock.read([sku])).get(sku) ?? 0;
        const quantity = current + qty;
        await this.stock.write(new Map([[sku, quantity]]));
        return { sku, quantity };
      },
      { fencing: true },
    );
  }
}
