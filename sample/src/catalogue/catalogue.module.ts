import { Module } from '@nestjs/common';
import { CatalogueController } from './catalogue.controller.js';
import { CatalogueRepository } from './catalogue.repository.js';
import { CatalogueService } from './catalogue.service.js';

/** The catalogue, under the `catalogue` read/write lock. */
@Module({
  controllers: [CatalogueController],
  providers: [CatalogueService, CatalogueRepository],
})
export class CatalogueModule {}
