import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commonConfig } from './common.js';
import { ConfigError, envReader } from './env.js';

const dir = mkdtempSync(join(tmpdir(), 'po-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function parse(env: Record<string, string>, defaultPort = 8080) {
  const read = envReader(env);
  const config = commonConfig(read, defaultPort);
  read.done();
  return config;
}

describe('METRICS_PORT', () => {
  it('defaults to a port of its own per service, 1000 above the API port', () => {
    expect(parse({}, 8080).metricsPort).toBe(9080);
    expect(parse({}, 8084).metricsPort).toBe(9084);
    expect(parse({ PORT: '3000' }, 8081).metricsPort).toBe(9081);
  });

  it('is read from METRICS_PORT (0: any free port) and range-checked', () => {
    expect(parse({ METRICS_PORT: '9464' }).metricsPort).toBe(9464);
    expect(parse({ METRICS_PORT: '0' }).metricsPort).toBe(0);
    expect(() => parse({ METRICS_PORT: '70000' })).toThrow(/METRICS_PORT must be <= 65535/);
  });
});

describe('DATABASE_CA_FILE', () => {
  it('is null when unset: TLS then follows the URL sslmode alone', () => {
    expect(parse({}).databaseCa).toBeNull();
  });

  it('is read once at start-up, so the pools get the PEM itself', () => {
    const file = join(dir, 'ca.crt');
    writeFileSync(file, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    expect(parse({ DATABASE_CA_FILE: file }).databaseCa).toContain('BEGIN CERTIFICATE');
  });

  it('refuses to start with a missing or empty file, naming the variable and the path', () => {
    const empty = join(dir, 'empty.crt');
    writeFileSync(empty, '\n');
    for (const [path, reason] of [
      [join(dir, 'missing.crt'), /DATABASE_CA_FILE: cannot read .*missing\.crt \(ENOENT\)/],
      [empty, /DATABASE_CA_FILE: .*empty\.crt is empty/],
    ] as const) {
      try {
        parse({ DATABASE_CA_FILE: path });
        expect.unreachable('a CA file that cannot be used must stop the start');
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).problems.join('\n')).toMatch(reason);
      }
    }
  });
});

describe('DATABASE_POOL_IDLE_SECONDS', () => {
  it('keeps idle connections five minutes by default, so a burst after a lull finds warm ones (decision 0112)', () => {
    expect(parse({}).databasePoolIdleMs).toBe(300_000);
    expect(parse({ DATABASE_POOL_IDLE_SECONDS: '30' }).databasePoolIdleMs).toBe(30_000);
  });

  it('refuses zero and values past a day', () => {
    expect(() => parse({ DATABASE_POOL_IDLE_SECONDS: '0' })).toThrow(/DATABASE_POOL_IDLE_SECONDS must be >= 1/);
    expect(() => parse({ DATABASE_POOL_IDLE_SECONDS: '86401' })).toThrow(/DATABASE_POOL_IDLE_SECONDS must be <= 86400/);
  });
});

describe('PostgreSQL behind a pooler and its bounds (issue 27)', () => {
  it('DATABASE_DIRECT_URL is null when unset, else a postgresql:// URL', () => {
    expect(parse({}).databaseDirectUrl).toBeNull();
    expect(parse({ DATABASE_DIRECT_URL: 'postgresql://app@db:5432/po' }).databaseDirectUrl).toBe('postgresql://app@db:5432/po');
    expect(() => parse({ DATABASE_DIRECT_URL: 'redis://db:6379' })).toThrow(/DATABASE_DIRECT_URL must use postgres or postgresql/);
    expect(() => parse({ DATABASE_DIRECT_URL: 'not a url' })).toThrow(/DATABASE_DIRECT_URL is not a valid URL/);
  });

  it('statement, lock and idle-in-transaction timeouts default to 30 s, 10 s and 15 s; 0 turns one off', () => {
    expect(parse({}).databaseTimeouts).toEqual({ statementMs: 30_000, lockMs: 10_000, idleInTransactionMs: 15_000 });
    expect(
      parse({ DATABASE_STATEMENT_TIMEOUT_MS: '0', DATABASE_LOCK_TIMEOUT_MS: '2500', DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '60000' }).databaseTimeouts,
    ).toEqual({ statementMs: 0, lockMs: 2500, idleInTransactionMs: 60_000 });
    expect(() => parse({ DATABASE_LOCK_TIMEOUT_MS: '-1' })).toThrow(/DATABASE_LOCK_TIMEOUT_MS must be >= 0/);
  });
});
