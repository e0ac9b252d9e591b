import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { Observable } from 'rxjs';
import { CounterStore } from './counter.store.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Counts per order as a read, a pause and a write: two calls that overlap
 * lose an update unless the lock makes them take turns.
 */
@Injectable()
export class OrdersService {
  constructor(private readonly store: CounterStore) {}

  @Locked('order:<id>')
  async increment(id: string): Promise<number> {
    return this.readModifyWrite(id);
  }

  /** The same work without the lock: the control that shows the race. */
  async incrementUnlocked(id: string): Promise<number> {
    return this.readModifyWrite(id);
  }

  /**
   * The count, read under the lock: an Observable method is locked per
   * subscription, until it completes.
   */
  @Locked('order:<id>')
  snapshot(id: string): Observable<{ id: string; count: number }> {
    return new Observable((subscriber) => {
      this.count(id).then(
        (count) => {
          subscriber.next({ id, count });
          subscriber.complete();
        },
        (error: unknown) => subscriber.error(error),
      );
    });
  }

  count(id: string): Promise<number> {
    return this.store.read(id);
  }

  private async readModifyWrite(id: string): Promise<number> {
    const current = await this.store.read(id);
    await pause(10);
    await this.store.write(id, current + 1);
    return current + 1;
  }
}
