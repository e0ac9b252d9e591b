import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { critical } from '../shared/overlap';

export interface ReserveDto {
  sku?: string;
}

/** Reserves stock under a lock per SKU; `critical` records any overlap. */
@Injectable()
export class StockService {
  /** Waits its turn (the module's waitTimeout). */
  @Locked('sku:<sku>')
  reserve(sku: string) {
    return critical(`sku:${sku}`, 20, () => ({ sku, reserved: true }));
  }

  /** One attempt: a held lock is a conflict at once. */
  @Locked('sku:<sku>', { waitTimeout: 0 })
  reserveNow(sku: string) {
    return critical(`sku:${sku}`, 20, () => ({ sku, reserved: true }));
  }

  /** The key comes from the body: no `sku` in it and the key cannot be built. */
  @Locked('sku:<dto.sku>', { waitTimeout: 0 })
  reserveFromBody(dto: ReserveDto) {
    return critical(`sku:${dto.sku}`, 5, () => ({
      sku: dto.sku,
      reserved: true,
    }));
  }
}
