import { describe, expect, it } from '@jest/globals';
import type { ArgumentsHost } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { LockConflictFilter, LockNotAcquiredError } from 'nestjs-redlock';
import { isObservable, lastValueFrom, type Observable } from 'rxjs';

// Outside HTTP the filter hands the error on the way each transport takes it
// from a filter (HTTP itself is tested over real HTTP in the e2e specs).
describe('LockConflictFilter outside HTTP', () => {
  const filter = new LockConflictFilter({} as HttpAdapterHost);
  const error = new LockNotAcquiredError(['sku:A1'], 1, 'busy', [], 100);
  const host = (type: string) => ({ getType: () => type }) as ArgumentsHost;

  it('microservices (RPC): an Observable that errors with the same error', async () => {
    const result = filter.catch(error, host('rpc'));
    expect(isObservable(result)).toBe(true);
    await expect(lastValueFrom(result as Observable<never>)).rejects.toBe(
      error,
    );
  });

  it('GraphQL and others: the same error, rethrown', () => {
    expect(() => filter.catch(error, host('graphql'))).toThrow(error);
  });
});
