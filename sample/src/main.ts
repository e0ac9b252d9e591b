import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { AppConfig } from './config/app-config.js';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  // Closes the Redis clients (and releases nothing half-done) on SIGTERM/SIGINT.
  app.enableShutdownHooks();
  const { port, host } = app.get(AppConfig);
  await app.listen(port, host);
  console.log(`sample listening on ${await app.getUrl()}`);
}

void bootstrap();
