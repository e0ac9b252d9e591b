import { Body, Controller, Get, Post, Put, Query } from '@nestjs/common';
import {
  CatalogueQueryDto,
  ReplaceCatalogueDto,
  RepriceDto,
} from './dto/catalogue.dto.js';
import { CatalogueService, type CatalogueView } from './catalogue.service.js';

/**
 * `GET /catalogue`: every item with its price and version, and whether
 * they all belong to one version (`consistent`); `PUT /catalogue
 * { items: [{ sku, price }] }` replaces it; `POST /catalogue/reprice
 * { percent }` changes every price. Reads share the catalogue's read lock,
 * writes take its write lock (409 from `LockConflictFilter` after the wait
 * timeout); `?locking=off` skips the lock.
 */
@Controller('catalogue')
export class CatalogueController {
  constructor(private readonly catalogue: CatalogueService) {}

  @Get()
  read(@Query() { locking }: CatalogueQueryDto): Promise<CatalogueView> {
    return locking === 'off'
      ? this.catalogue.readUnlocked()
      : this.catalogue.read();
  }

  @Put()
  replace(@Body() { items }: ReplaceCatalogueDto): Promise<CatalogueView> {
    return this.catalogue.replace(
      items.map(({ sku, price }) => ({ sku, price })),
    );
  }

  @Post('reprice')
  reprice(
    @Body() { percent }: RepriceDto,
    @Query() { locking }: CatalogueQueryDto,
  ): Promise<CatalogueView> {
    return locking === 'off'
      ? this.catalogue.repriceUnlocked(percent)
      : this.catalogue.reprice(percent);
  }
}
