import { Module } from '@nestjs/common';
import { StockController } from './stock.controller.js';
import { StockRepository } from './stock.repository.js';

@Module({
  controllers: [StockController],
  providers: [StockRepository],
  exports: [StockRepository],
})
export class StockModule {}
