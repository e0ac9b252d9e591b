import 'reflect-metadata';
import { type INestApplicationContext, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { WorkerHost } from '@nestjs/bullmq';
import {
  AccountsProcessor,
  SkippingAccountsProcessor,
} from './accounts.processor';
import { MODE } from './env';
import { QueueAppModule } from './queue.module';

/**
 * One worker process. On SIGTERM it closes the app (the worker finishes
 * its active jobs, connections close) and then exits by itself.
 */
async function main(): Promise<void> {
  const logger = new Logger('QueueMain');
  let app: INestApplicationContext | undefined;
  let stopping = false;
  const stop = () =>
    void app?.close().then(() => logger.log(`closed ${process.pid}`));
  // Registered before boot: a SIGTERM during start still closes cleanly;
  // a second one while closing changes nothing.
  process.on('SIGTERM', () => {
    if (stopping) return;
    stopping = true;
    stop();
  });
  app = await NestFactory.createApplicationContext(QueueAppModule);
  const host: WorkerHost = app.get(
    MODE === 'skip' ? SkippingAccountsProcessor : AccountsProcessor,
  );
  await host.worker.waitUntilReady();
  logger.log(`ready ${process.pid}`);
  if (stopping) stop();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
