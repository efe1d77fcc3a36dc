import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commonConfig } from './common.js';
import { envReader } from './env.js';
import { describeRedis } from './redis.js';

const dir = mkdtempSync(join(tmpdir(), 'po-redis-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function parse(env: Record<string, string>) {
  const read = envReader(env);
  const config = commonConfig(read, 8080);
  read.done();
  return config;
}

describe('the Redis topology (decision 0123)', () => {
  it('is one node by REDIS_URL when nothing else is set, with a 5 s command timeout and no replica wait', () => {
    const { redis } = parse({ REDIS_URL: 'redis://cache:6380' });
    expect(redis).toMatchObject({ topology: { kind: 'single', url: 'redis://cache:6380' }, tls: false, commandTimeoutMs: 5000, minReplicasAck: 0 });
    expect(parse({ REDIS_URL: 'rediss://cache:6380' }).redis.tls).toBe(true);
  });

  it('is Sentinel with REDIS_SENTINELS and REDIS_SENTINEL_MASTER, passwords apart', () => {
    const { redis } = parse({
      REDIS_SENTINELS: 's1:26379, s2:26380,[::1]:26381',
      REDIS_SENTINEL_MASTER: 'po',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
      REDIS_USERNAME: 'po',
      REDIS_PASSWORD: 'data-secret',
      REDIS_MIN_REPLICAS_ACK: '1',
    });
    expect(redis.topology).toEqual({
      kind: 'sentinel',
      masterName: 'po',
      sentinelPassword: 'sentinel-secret',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
    });
    expect(redis).toMatchObject({ username: 'po', password: 'data-secret', minReplicasAck: 1 });
    expect(describeRedis(redis)).toBe('sentinel po via s1:26379,s2:26380,::1:26381');
  });

  it('is a cluster with REDIS_CLUSTER_NODES', () => {
    const { redis } = parse({ REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2:7000' });
    expect(redis.topology).toEqual({ kind: 'cluster', nodes: [{ host: '10.0.0.1', port: 7000 }, { host: '10.0.0.2', port: 7000 }] });
  });

  it('refuses Sentinel and a cluster at once, a master without sentinels and malformed seeds', () => {
    expect(() => parse({ REDIS_SENTINELS: 's:1', REDIS_SENTINEL_MASTER: 'm', REDIS_CLUSTER_NODES: 'c:1' })).toThrow(/not both/);
    expect(() => parse({ REDIS_SENTINELS: 's:26379' })).toThrow(/REDIS_SENTINEL_MASTER is required/);
    expect(() => parse({ REDIS_SENTINEL_MASTER: 'po' })).toThrow(/needs REDIS_SENTINELS/);
    expect(() => parse({ REDIS_CLUSTER_NODES: 'nohost,h:99999' })).toThrow(/"nohost" is not host:port[\s\S]*"h:99999" is not host:port/);
  });

  it('turns TLS on with a CA file, read once', () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    expect(parse({ REDIS_TLS_CA_FILE: ca }).redis).toMatchObject({ tls: true, ca: expect.stringContaining('BEGIN CERTIFICATE') });
    expect(() => parse({ REDIS_TLS_CA_FILE: join(dir, 'missing.pem') })).toThrow(/REDIS_TLS_CA_FILE: cannot read/);
  });

  it('never names a password when it describes where Redis is', () => {
    expect(describeRedis(parse({ REDIS_URL: 'redis://:hunter2@cache:6379/0' }).redis)).toBe('redis://cache:6379');
  });

  it('refuses a queue prefix with braces: its own hash tag would put every queue in one slot', () => {
    expect(() => parse({ QUEUE_PREFIX: '{po}' })).toThrow(/QUEUE_PREFIX may not hold braces/);
    expect(parse({ QUEUE_PREFIX: 'pobench:run-1' }).queuePrefix).toBe('pobench:run-1');
  });
});
