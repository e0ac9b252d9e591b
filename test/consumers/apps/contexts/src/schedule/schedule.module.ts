import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { RedlockModule } from 'nestjs-redlock';
import { REDIS_URLS, RUN_ID } from './env';
import { JobsService } from './jobs.service';
import { RecorderService } from './recorder.service';
import { ReportService } from './report.service';

@Module({
  imports: [
    ScheduleModule.forRoot(),
    RedlockModule.forRoot({
      clients: REDIS_URLS,
      keyPrefix: `lock:${RUN_ID}:`,
      // Short node timeouts: the outage case answers within the tick.
      nodeTimeout: 200,
    }),
  ],
  providers: [RecorderService, ReportService, JobsService],
})
export class ScheduleAppModule {}
