import { Module } from '@nestjs/common';
import { PaymentsController } from './payments.controller.js';
import { PaymentsService } from './payments.service.js';
import { PspClient } from './psp.client.js';

@Module({
  controllers: [PaymentsController],
  providers: [PaymentsService, PspClient],
})
export class PaymentsModule {}
