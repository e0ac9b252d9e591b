import { Controller, Module } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { redlockModule } from '../shared/redis';
import { type ReserveDto, RpcStockService } from './stock.service';

@Controller()
export class RpcStockController {
  constructor(private readonly stock: RpcStockService) {}

  @MessagePattern('reserve')
  reserve(@Payload() dto: ReserveDto) {
    return this.stock.reserve(dto);
  }

  @MessagePattern('reserve-now')
  reserveNow(@Payload() dto: ReserveDto) {
    return this.stock.reserveNow(dto);
  }
}

/** A TCP microservice (`createNestMicroservice({ transport: Transport.TCP })`). */
@Module({
  imports: [redlockModule()],
  controllers: [RpcStockController],
  providers: [RpcStockService],
})
export class RpcAppModule {}
