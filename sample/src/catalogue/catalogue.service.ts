import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { AppConfig } from '../config/app-config.js';
import {
  CatalogueRepository,
  type PricedItem,
} from './catalogue.repository.js';

/** The lock resource of the whole catalogue. */
export const CATALOGUE = 'catalogue';

/** What a read of the catalogue returns. */
export interface CatalogueView {
  items: PricedItem[];
  /** Whether every item belongs to one version: false for a read in the middle of a reprice. */
  consistent: boolean;
}

/**
 * The catalogue under a read/write lock: any number of reads at once
 * (`mode: 'read'`, they never wait for each other), a reprice alone
 * (`mode: 'write'`: it waits for the reads under way, and new reads wait
 * for it), so no read sees some items repriced and others not. A reprice
 * waiting for readers keeps new readers out, so a steady stream of reads
 * cannot starve it.
 */
@Injectable()
export class CatalogueService {
  constructor(
    private readonly repo: CatalogueRepository,
    private readonly config: AppConfig,
  ) {}

  @Locked(CATALOGUE, { mode: 'read' })
  read(): Promise<CatalogueView> {
    return this.view();
  }

  /** Replaces the catalogue (seeding): version 1 of every item. */
  @Locked(CATALOGUE, { mode: 'write' })
  async replace(items: Omit<PricedItem, 'version'>[]): Promise<CatalogueView> {
    await this.repo.clear();
    for (const item of items) await this.repo.put({ ...item, version: 1 });
    return this.view();
  }

  /** Changes every price by `percent`, item by item: the next version. */
  @Locked(CATALOGUE, { mode: 'write' })
  reprice(percent: number): Promise<CatalogueView> {
    return this.repriceItems(percent);
  }

  /** The same read without the lock, to show what it prevents. */
  readUnlocked(): Promise<CatalogueView> {
    return this.view();
  }

  /** The same reprice without the lock. */
  repriceUnlocked(percent: number): Promise<CatalogueView> {
    return this.repriceItems(percent);
  }

  private async repriceItems(percent: number): Promise<CatalogueView> {
    const items = await this.repo.all();
    const version = Math.max(0, ...items.map((i) => i.version)) + 1;
    for (const item of items) {
      const price = Math.max(
        1,
        Math.round((item.price * (100 + percent)) / 100),
      );
      await this.repo.put({ sku: item.sku, price, version });
      // The time each row's update takes: readers in between see a mix.
      if (this.config.repriceGapMs > 0) await sleep(this.config.repriceGapMs);
    }
    return this.view();
  }

  private async view(): Promise<CatalogueView> {
    const items = await this.repo.all();
    return {
      items,
      consistent: new Set(items.map((item) => item.version)).size <= 1,
    };
  }
}
