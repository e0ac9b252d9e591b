import { Injectable } from '@nestjs/common';
import { Locked } from 'nestjs-redlock';
import { PSP_CONCURRENCY, PspClient, type Charge } from './psp.client.js';

/**
 * Payments through a provider that takes at most `PSP_CONCURRENCY` calls
 * at once for the account. A counting semaphore keeps every replica of
 * the app within it: each call holds one of `PSP_CONCURRENCY` permits
 * while it talks to the provider, and waits for one (up to the module's
 * `waitTimeout`) when all are taken, instead of being refused by the
 * provider.
 */
@Injectable()
export class PaymentsService {
  constructor(private readonly psp: PspClient) {}

  @Locked('psp', { permits: PSP_CONCURRENCY })
  charge(orderId: string, amount: number): Promise<Charge> {
    return this.psp.charge(orderId, amount);
  }

  /** The same call without the semaphore, to show what it prevents. */
  chargeUnlimited(orderId: string, amount: number): Promise<Charge> {
    return this.psp.charge(orderId, amount);
  }
}
