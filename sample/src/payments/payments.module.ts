import { Module } from '@nestjs/common';
import { PaymentsController } from './payments.controller.js';
import { PaymentsService } from './payments.service.js';
import { PspClient } from './psp.client.js';

/** Payments through the provider, under the `psp` semaphore. */
@Module({
  controllers: [PaymentsController],
  providers: [PaymentsService, PspClient],
})
export class PaymentsModule {}
