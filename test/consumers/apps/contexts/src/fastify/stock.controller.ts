import { Body, Controller, Param, Post, UseInterceptors } from '@nestjs/common';
import { LockInterceptor, LockKey } from 'nestjs-redlock';
import { type ReserveDto, StockService } from './stock.service';

@Controller('stock')
export class StockController {
  constructor(private readonly stock: StockService) {}

  @Post(':sku/reserve')
  reserve(@Param('sku') sku: string) {
    return this.stock.reserve(sku);
  }

  @Post(':sku/reserve-now')
  reserveNow(@Param('sku') sku: string) {
    return this.stock.reserveNow(sku);
  }

  @Post('reserve')
  reserveFromBody(@Body() dto: ReserveDto) {
    return this.stock.reserveFromBody(dto);
  }

  /** The interceptor's key reads the request: no `sku` in the body is a 400. */
  @Post('intercepted')
  @UseInterceptors(LockInterceptor)
  @LockKey('sku:<body.sku>', { waitTimeout: 0 })
  intercepted(@Body() dto: ReserveDto) {
    return { sku: dto.sku, reserved: true };
  }
}
