import { describe, expect, it } from '@jest/globals';
import { acquireReply, releaseReply } from '../../lib/core/scripts/index.js';

// The scripts answer with plain integers (cheaper than arrays on every
// request); these readers are the one place that decodes them.
describe('script replies', () => {
  it('reads an acquire reply: granted, fenced grant, held (with the lease left), free but queued', () => {
    expect(acquireReply(1)).toEqual({ granted: true });
    expect(acquireReply([1, 0, '7'])).toEqual({ granted: true });
    expect(acquireReply(-2)).toEqual({ granted: false, holderTtl: 0 });
    expect(acquireReply(-9_002)).toEqual({ granted: false, holderTtl: 9_000 });
    expect(acquireReply(-1)).toEqual({ granted: false, holderTtl: undefined });
  });

  it('reads a release reply: keys deleted, and whether a place was reserved', () => {
    expect(releaseReply(0)).toEqual({ deleted: 0, reserved: false });
    expect(releaseReply(2)).toEqual({ deleted: 1, reserved: false });
    expect(releaseReply(3)).toEqual({ deleted: 1, reserved: true });
    expect(releaseReply(6)).toEqual({ deleted: 3, reserved: false });
  });
});
