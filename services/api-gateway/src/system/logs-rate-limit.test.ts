import { describe, expect, it } from 'vitest';
import { ClientBuckets, clientKey } from './logs-rate-limit.js';

const limits = { ratePerMinute: 600, burst: 2 };

describe('client buckets: memory stays bounded', () => {
  it('an idle client whose bucket has refilled is forgotten as other requests come', () => {
    const buckets = new ClientBuckets(limits);
    expect(buckets.take('a', 0)).toBeNull();
    expect(buckets.take('b', 0)).toBeNull();
    expect(buckets.size).toBe(2);
    // 600 a minute with a burst of 2: full again after 200 ms.
    expect(buckets.take('c', 200)).toBeNull();
    expect(buckets.size).toBe(1);
  });

  it('a client that is still limited is remembered', () => {
    const buckets = new ClientBuckets(limits);
    buckets.take('a', 0);
    buckets.take('a', 0);
    expect(buckets.take('a', 0)).toBe(1);
    buckets.take('b', 50);
    expect(buckets.size).toBe(2);
    expect(buckets.take('a', 50)).toBe(1);
  });

  it('never holds more than its maximum: the least recently used goes first', () => {
    const buckets = new ClientBuckets(limits, 3);
    for (const client of ['a', 'b', 'c', 'd', 'e']) buckets.take(client, 0);
    expect(buckets.size).toBe(3);
    // 'a' was forgotten: it starts again with a full bucket.
    expect(buckets.take('a', 0)).toBeNull();
    expect(buckets.take('a', 0)).toBeNull();
    expect(buckets.take('a', 0)).toBe(1);
  });
});

describe('client key', () => {
  it('is the last X-Forwarded-For entry (the nearest proxy appended it), else the socket address', () => {
    expect(clientKey(['203.0.113.9', '198.51.100.1'], '10.0.0.1')).toBe('198.51.100.1');
    expect(clientKey([' 198.51.100.1'], '10.0.0.1')).toBe('198.51.100.1');
    expect(clientKey([], '10.0.0.1')).toBe('10.0.0.1');
    expect(clientKey([], '::ffff:127.0.0.1')).toBe('127.0.0.1');
  });

  it('counts IPv6 clients per /64, however the address is written', () => {
    const key = '2001:db8:1:2::/64';
    expect(clientKey(['2001:db8:1:2::1'], '')).toBe(key);
    expect(clientKey(['2001:0db8:0001:0002:ffff:ffff:ffff:ffff'], '')).toBe(key);
    expect(clientKey(['2001:DB8:1:2:0:0:0:7%eth0'], '')).toBe(key);
    expect(clientKey(['2001:db8:1:3::1'], '')).not.toBe(key);
    expect(clientKey(['::1'], '')).toBe('0:0:0:0::/64');
  });
});
