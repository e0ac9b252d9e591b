import { Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config.js';

/** Makes {@link AppConfig} injectable everywhere, like `ConfigModule.forRoot({ isGlobal: true })`. */
@Global()
@Module({ providers: [AppConfig], exports: [AppConfig] })
export class AppConfigModule {}
