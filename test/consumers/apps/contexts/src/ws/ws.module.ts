import { Module } from '@nestjs/common';
import {
  MessageBody,
  SubscribeMessage,
  WebSocketGateway,
} from '@nestjs/websockets';
import { redlockModule } from '../shared/redis';
import { type ReserveDto, WsStockService } from './stock.service';

/** A socket.io gateway on the app's HTTP server; replies go to the ack. */
@WebSocketGateway()
export class StockGateway {
  constructor(private readonly stock: WsStockService) {}

  @SubscribeMessage('reserve')
  reserve(@MessageBody() dto: ReserveDto) {
    return this.stock.reserve(dto);
  }

  @SubscribeMessage('reserve-now')
  reserveNow(@MessageBody() dto: ReserveDto) {
    return this.stock.reserveNow(dto);
  }
}

@Module({
  imports: [redlockModule()],
  providers: [StockGateway, WsStockService],
})
export class WsAppModule {}
