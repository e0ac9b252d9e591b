import { Global, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { AppConfig } from './app-config.js';
import { validate } from './environment.js';

/**
 * The environment through `@nestjs/config` (validated at start), and the
 * sample's typed {@link AppConfig} built from it, injectable everywhere.
 */
@Global()
@Module({
  imports: [ConfigModule.forRoot({ isGlobal: true, validate })],
  providers: [AppConfig],
  exports: [AppConfig],
})
export class AppConfigModule {}
