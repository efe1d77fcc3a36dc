import { describe, expect, it } from 'vitest';
import { keySlot } from '@po/queues';
import { tagsPerMaster } from './redis-loss.js';

describe('the Redis-loss markers on a cluster', () => {
  it('puts one marker in a slot of each master, so a lossy failover of any one of them is seen', () => {
    // Three masters over the 16384 slots, as `redis-cli --cluster create` splits them.
    const slots = Array.from({ length: 16384 }, (_, slot) => (slot <= 5460 ? ['10.0.0.1:7000', '10.0.0.4:7003'] : slot <= 10922 ? ['10.0.0.2:7001'] : ['10.0.0.3:7002']));
    const tags = tagsPerMaster(slots, 'po:redis-loss');
    expect(tags).toHaveLength(3);
    expect(new Set(tags.map((t) => slots[keySlot(`{${t}}:any-instance`)]![0]))).toEqual(new Set(['10.0.0.1:7000', '10.0.0.2:7001', '10.0.0.3:7002']));
  });

  it('has none while the slot table is not known yet', () => {
    expect(tagsPerMaster([], 'po:redis-loss')).toEqual([]);
  });
});
