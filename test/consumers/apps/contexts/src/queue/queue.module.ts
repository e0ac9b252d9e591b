import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { RedlockModule } from 'nestjs-redlock';
import { AccountWork } from './account-work.service';
import {
  AccountsProcessor,
  SkippingAccountsProcessor,
} from './accounts.processor';
import { MODE, QUEUE, QUEUE_URL, REDIS_URLS, RUN_ID } from './env';

const queueNode = new URL(QUEUE_URL);

@Module({
  imports: [
    BullModule.forRoot({
      connection: { host: queueNode.hostname, port: Number(queueNode.port) },
    }),
    BullModule.registerQueue({ name: QUEUE }),
    RedlockModule.forRoot({
      clients: REDIS_URLS,
      keyPrefix: `lock:${RUN_ID}:`,
    }),
  ],
  providers: [
    AccountWork,
    MODE === 'skip' ? SkippingAccountsProcessor : AccountsProcessor,
  ],
})
export class QueueAppModule {}
