import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Locked, LockService, compareFencingTokens } from 'nestjs-redlock';
import { createApp, type TestApp } from '../fixtures/create-app.js';

@Injectable()
class FencedWorker {
  constructor(readonly locks: LockService) {}

  @Locked('job:<id>', { fencing: true })
  async outer(id: string): Promise<{ outer?: string; inner?: string }> {
    const outer = this.locks.current()?.fencingToken;
    const inner = await this.inner(id);
    return { outer, inner };
  }

  @Locked('job:<0>', { fencing: true })
  async inner(_id: string): Promise<string | undefined> {
    return Promise.resolve(this.locks.current()?.fencingToken);
  }

  @Locked('job:<0>')
  async unfenced(_id: string): Promise<string | undefined> {
    return Promise.resolve(this.locks.current()?.fencingToken);
  }
}

describe('@Locked with fencing tokens', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createApp({ providers: [FencedWorker] });
  });
  afterAll(() => t?.close());

  it('gives the handler a token that grows with every grant; a nested call keeps it', async () => {
    const worker = t.app.get(FencedWorker);
    const first = await worker.outer('a');
    const second = await worker.outer('a');
    expect(first.outer).toMatch(/^\d+$/);
    expect(first.inner).toBe(first.outer);
    expect(compareFencingTokens(second.outer!, first.outer!)).toBeGreaterThan(
      0,
    );
  });

  it('has no token without fencing', async () => {
    expect(await t.app.get(FencedWorker).unfenced('b')).toBeUndefined();
  });
});
