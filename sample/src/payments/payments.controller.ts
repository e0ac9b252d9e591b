import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Post,
  Query,
} from '@nestjs/common';
import { PaymentDto, PaymentQueryDto } from './dto/payment.dto.js';
import { PaymentsService } from './payments.service.js';
import { PspClient, type Charge, type PspStats } from './psp.client.js';

/**
 * `POST /payments { orderId, amount }`: 201 with the provider's reference;
 * 409 (from `LockConflictFilter`) when no permit freed within the wait
 * timeout; 502 `code: 'PSP_REFUSED'` when the provider was at its limit
 * (only without the semaphore: `?limit=off`). `GET /payments/psp`: what the
 * provider saw; `DELETE /payments/psp` forgets it.
 */
@Controller('payments')
export class PaymentsController {
  constructor(
    private readonly payments: PaymentsService,
    private readonly psp: PspClient,
  ) {}

  @Post()
  pay(
    @Body() { orderId, amount }: PaymentDto,
    @Query() { limit }: PaymentQueryDto,
  ): Promise<Charge> {
    return limit === 'off'
      ? this.payments.chargeUnlimited(orderId, amount)
      : this.payments.charge(orderId, amount);
  }

  @Get('psp')
  stats(): Promise<PspStats> {
    return this.psp.stats();
  }

  @Delete('psp')
  @HttpCode(204)
  reset(): Promise<void> {
    return this.psp.reset();
  }
}
