import { describe, expect, it } from 'vitest';
import { keySlot } from './key-slot.js';

describe('keySlot', () => {
  it('is CRC16-XMODEM modulo 16384 (the cluster specification examples)', () => {
    expect(keySlot('123456789')).toBe(0x31c3 % 16384);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('bar')).toBe(5061);
  });

  it('hashes only the hash tag when there is a non-empty one', () => {
    expect(keySlot('{user1000}.following')).toBe(keySlot('user1000'));
    expect(keySlot('po:{app_1_echo}:wait')).toBe(keySlot('po:{app_1_echo}:id'));
    expect(keySlot('foo{}{bar}')).toBe(keySlot('foo{}{bar}'));
    expect(keySlot('foo{}{bar}')).not.toBe(keySlot('bar'));
    expect(keySlot('foo{{bar}}zap')).toBe(keySlot('{bar'));
  });
});
