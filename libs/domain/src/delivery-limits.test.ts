// Per-process and per-application delivery limits of the worker-gateway (issue 10 items 4–5,
// decision 0081).
import { describe, expect, it } from 'vitest';
import { fetchRoom, pullRefusal, type DeliveryLimits } from './delivery-limits.js';

const limits: DeliveryLimits = { maxInflight: 128, maxInflightPerApp: 64, maxWaitingPerApp: 256, maxInflightBytes: 64 * 1024 * 1024 };
const idle = { inflight: 0, inflightBytes: 0, appInflight: 0, appWaiting: 0 };

describe('pullRefusal', () => {
  it('lets a pull wait while every limit has room', () => {
    expect(pullRefusal(idle, limits)).toBeNull();
    expect(pullRefusal({ inflight: 127, inflightBytes: limits.maxInflightBytes - 1, appInflight: 63, appWaiting: 255 }, limits)).toBeNull();
  });

  it('refuses at the process in-flight limit, whichever application asks', () => {
    expect(pullRefusal({ ...idle, inflight: 128 }, limits)).toBe('process_inflight');
  });

  it("refuses an application at its own in-flight or waiting limit, not because of another's", () => {
    expect(pullRefusal({ ...idle, inflight: 64, appInflight: 64 }, limits)).toBe('app_inflight');
    expect(pullRefusal({ ...idle, inflight: 64, appInflight: 0 }, limits)).toBeNull();
    expect(pullRefusal({ ...idle, appWaiting: 256 }, limits)).toBe('app_waiting');
  });

  it('refuses once the held bytes reach the bound', () => {
    expect(pullRefusal({ ...idle, inflight: 1, inflightBytes: limits.maxInflightBytes }, limits)).toBe('process_bytes');
  });
});

describe('fetchRoom', () => {
  it('is the smallest of the wanted count and every limit left', () => {
    expect(fetchRoom(idle, limits, 8, 1000)).toBe(8);
    expect(fetchRoom({ ...idle, inflight: 125 }, limits, 8, 1000)).toBe(3);
    expect(fetchRoom({ ...idle, appInflight: 62 }, limits, 8, 1000)).toBe(2);
    expect(fetchRoom({ ...idle, inflight: 128 }, limits, 8, 1000)).toBe(0);
  });

  it('divides the bytes left by the size of recent messages, allowing one while any room is left', () => {
    const mb = 1024 * 1024;
    expect(fetchRoom(idle, limits, 32, 8 * mb)).toBe(8);
    expect(fetchRoom({ ...idle, inflight: 1, inflightBytes: 63 * mb }, limits, 32, 8 * mb)).toBe(1);
    expect(fetchRoom({ ...idle, inflight: 1, inflightBytes: 64 * mb }, limits, 32, 1)).toBe(0);
  });

  it('allows a message bigger than the bound when nothing is held', () => {
    expect(fetchRoom(idle, { ...limits, maxInflightBytes: 1000 }, 1, 5000)).toBe(1);
  });
});
