import 'reflect-metadata';
import { type INestApplicationContext, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleAppModule } from './schedule.module';

/**
 * One replica of the scheduler, a standalone process (no HTTP). On SIGTERM
 * it closes the app and then exits by itself: anything left open would keep
 * it alive, which the test reports.
 */
async function main(): Promise<void> {
  const logger = new Logger('ScheduleMain');
  let app: INestApplicationContext | undefined;
  let stopping = false;
  const stop = () =>
    void app
      ?.close()
      .then(() => logger.log(`closed ${process.pid} at ${Date.now()}`));
  // Registered before boot: a SIGTERM during start still closes cleanly;
  // a second one while closing changes nothing.
  process.on('SIGTERM', () => {
    if (stopping) return;
    stopping = true;
    stop();
  });
  app = await NestFactory.createApplicationContext(ScheduleAppModule);
  logger.log(`ready ${process.pid}`);
  if (stopping) stop();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
