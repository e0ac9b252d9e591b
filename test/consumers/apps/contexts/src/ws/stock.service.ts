import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { critical } from '../shared/overlap';

export interface ReserveDto {
  sku?: string;
}

/** Reserves stock under a lock per SKU; `critical` records any overlap. */
@Injectable()
export class WsStockService {
  /** Waits its turn (the module's waitTimeout). */
  @Locked('sku:<dto.sku>')
  reserve(dto: ReserveDto) {
    return critical(`sku:${dto.sku}`, 20, () => ({
      sku: dto.sku,
      reserved: true,
    }));
  }

  /** One attempt: a held lock is a conflict at once; no `sku`, no key. */
  @Locked('sku:<dto.sku>', { waitTimeout: 0 })
  reserveNow(dto: ReserveDto) {
    return critical(`sku:${dto.sku}`, 20, () => ({
      sku: dto.sku,
      reserved: true,
    }));
  }
}
