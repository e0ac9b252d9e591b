import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { Observable } from 'rxjs';

/**
 * Counts per order in memory, as a read, a pause and a write: two calls that
 * overlap lose an update unless the lock makes them take turns. The store is
 * module-level so that two app instances in one test process share it, as
 * two replicas share a database.
 */
const counts = new Map<string, number>();

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

@Injectable()
export class OrdersService {
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
      const timer = setTimeout(() => {
        subscriber.next({ id, count: this.count(id) });
        subscriber.complete();
      }, 5);
      return () => clearTimeout(timer);
    });
  }

  count(id: string): number {
    return counts.get(id) ?? 0;
  }

  private async readModifyWrite(id: string): Promise<number> {
    const current = counts.get(id) ?? 0;
    await pause(10);
    counts.set(id, current + 1);
    return current + 1;
  }
}
