import { describe, expect, it, jest } from '@jest/globals';
import {
  Catch,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common';
import type { ApplicationConfig } from '@nestjs/core';
import {
  isLockConflict,
  lockConflictOf,
  LockConflictFilter,
  LockNotAcquiredError,
  LockServiceUnavailableError,
  RedlockError,
} from 'nestjs-redlock';
import { isObservable, lastValueFrom, type Observable } from 'rxjs';

// The answer in each context, from the filter alone (HTTP on Express and
// Fastify, and every context end to end, are tested with real apps).
const nodes = [
  { node: '10.1.2.3:6379', outcome: 'busy' as const },
  { node: '10.1.2.4:6379', outcome: 'pending' as const },
];
const busy = () =>
  new LockNotAcquiredError(['sku:A1', 'sku:B2'], 3, 'busy', nodes, 9851.2);
const down = () =>
  new LockNotAcquiredError(['sku:A1'], 1, 'unreachable', nodes, 200);
const host = (type: string, args: unknown[] = []) =>
  ({
    getType: () => type,
    getArgByIndex: (i: number) => args[i],
    switchToWs: () => ({ getClient: () => args[0] }),
  }) as unknown as ArgumentsHost;

const conflict = {
  name: 'LockNotAcquiredError',
  code: 'CONFLICT',
  statusCode: 409,
  message: 'The resource is locked: sku:A1, sku:B2. Retry after 10 s.',
  reason: 'busy',
  resources: ['sku:A1', 'sku:B2'],
  retryAfterMs: 9852,
};

describe('LockConflictFilter in each context', () => {
  const filter = new LockConflictFilter();

  it('microservices (RPC): an Observable that errors with the RPC error shape', async () => {
    const result = filter.catch(busy(), host('rpc'));
    expect(isObservable(result)).toBe(true);
    const sent = await lastValueFrom(result as Observable<never>).catch(
      (e: unknown) => e,
    );
    expect(sent).toEqual({ status: 'error', ...conflict });
    // What the transport sends is JSON: nothing is lost on the way.
    expect(JSON.parse(JSON.stringify(sent))).toEqual(sent);
    expect(isLockConflict(sent)).toBe(true);
  });

  it('GraphQL: an error with the conflict in its extensions, no stack frames, no node address', () => {
    const answer = filter.catch(busy(), host('graphql')) as Error & {
      extensions: Record<string, unknown>;
    };
    expect(answer).toBeInstanceOf(Error);
    expect(answer.message).toBe(conflict.message);
    const { message: _, ...extensions } = conflict;
    expect(answer.extensions).toEqual(extensions);
    expect(answer.stack).toBe(`LockNotAcquiredError: ${conflict.message}`);
    expect(lockConflictOf(answer)).toEqual(conflict);
  });

  it('WebSockets: the exception event and the acknowledgement, same payload', () => {
    const emit = jest.fn();
    const ack = jest.fn();
    expect(filter.catch(down(), host('ws', [{ emit }, {}, ack]))).toBe(
      undefined,
    );
    const payload = {
      status: 'error',
      name: 'LockNotAcquiredError',
      code: 'SERVICE_UNAVAILABLE',
      statusCode: 503,
      message: 'The lock service is unavailable for: sku:A1. Retry after 1 s.',
      reason: 'unreachable',
      resources: ['sku:A1'],
      retryAfterMs: 200,
    };
    expect(emit).toHaveBeenCalledWith('exception', payload);
    expect(ack).toHaveBeenCalledWith(payload);
  });

  it('WebSockets on the ws adapter: sent as an event frame', () => {
    const send = jest.fn();
    filter.catch(
      busy(),
      host('ws', [{ readyState: 1, send, emit: jest.fn() }]),
    );
    expect(JSON.parse(send.mock.calls[0][0] as string)).toEqual({
      event: 'exception',
      data: { status: 'error', ...conflict },
    });
  });

  it('shutdown: 503 in every context, the programming errors are not answered', async () => {
    const shutdown = new LockServiceUnavailableError(
      'LockService.run',
      'shutdown',
    );
    const sent = await lastValueFrom(
      filter.catch(shutdown, host('rpc')) as Observable<never>,
    ).catch((e: unknown) => e);
    expect(sent).toMatchObject({
      status: 'error',
      code: 'SERVICE_UNAVAILABLE',
      reason: 'shutdown',
      resources: [],
    });
    const unmanaged = new LockServiceUnavailableError(
      '@Locked A.b',
      'unmanaged',
    );
    expect(() => filter.catch(unmanaged, host('graphql'))).toThrow(unmanaged);
  });

  it("no context's answer names a node", async () => {
    const answers = [
      await lastValueFrom(
        filter.catch(busy(), host('rpc')) as Observable<never>,
      ).catch((e: unknown) => e),
      filter.catch(busy(), host('graphql')),
    ];
    const emit = jest.fn();
    filter.catch(busy(), host('ws', [{ emit }]));
    answers.push(emit.mock.calls[0][1]);
    for (const answer of answers) {
      const text = JSON.stringify(answer) + String((answer as Error).stack);
      expect(text).not.toMatch(/10\.1\.2\.\d/);
    }
  });

  it("the app's own global filter for these errors answers instead", () => {
    @Catch(LockNotAcquiredError)
    class Mine implements ExceptionFilter {
      catch = jest.fn(() => 'mine');
    }
    @Catch(RedlockError)
    class Parent implements ExceptionFilter {
      catch = jest.fn(() => 'parent');
    }
    @Catch()
    class Everything implements ExceptionFilter {
      catch = jest.fn(() => 'everything');
    }
    const config = (filters: ExceptionFilter[]) =>
      ({ getGlobalFilters: () => filters }) as unknown as ApplicationConfig;
    const ours = new LockConflictFilter(undefined, config([]));
    const mine = new Mine();
    const withMine = new LockConflictFilter(
      undefined,
      config([mine, new Everything(), ours]),
    );
    expect(withMine.catch(busy(), host('graphql'))).toBe('mine');
    const withParent = new LockConflictFilter(
      undefined,
      config([new Parent(), ours]),
    );
    expect(withParent.catch(busy(), host('graphql'))).toBe('parent');
    // A catch-all filter (error reporting) does not take conflicts over.
    const withAll = new LockConflictFilter(
      undefined,
      config([new Everything(), ours]),
    );
    expect(withAll.catch(busy(), host('graphql'))).toBeInstanceOf(Error);
  });

  it('lockConflictOf reads the error itself and leaves other values alone', () => {
    expect(lockConflictOf(busy())).toEqual(conflict);
    expect(
      lockConflictOf({ status: 'error', message: 'Internal server error' }),
    ).toBe(undefined);
    expect(lockConflictOf(new Error('x'))).toBe(undefined);
    expect(lockConflictOf(null)).toBe(undefined);
    expect(isLockConflict({ ...conflict, resources: 'sku:A1' })).toBe(false);
  });
});
