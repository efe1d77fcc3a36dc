import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@po/telemetry';
import { createHttpApp } from './app.js';
import { healthRouter, type HealthOptions } from './health.js';
import { listen, type RunningServer } from './server.js';

const logger = createLogger({ service: 'test', destination: new Writable({ write: (_c, _e, done) => done() }) });
const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A readiness check that counts its calls (one call = one database round trip in a service). */
function counting(behaviour: () => Promise<unknown>) {
  const check = Object.assign(async () => {
    check.calls += 1;
    return behaviour();
  }, { calls: 0 });
  return check;
}

async function serve(checks: Parameters<typeof healthRouter>[0], options?: HealthOptions): Promise<string> {
  const server = await listen(createHttpApp({ logger, routers: [healthRouter(checks, options)] }), '127.0.0.1', 0);
  servers.push(server);
  return `http://127.0.0.1:${server.port}`;
}

const readyz = async (url: string) => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as unknown };
};

describe('GET /readyz through a public Ingress', () => {
  it('50 concurrent anonymous calls cost one PostgreSQL ping and one Redis ping', async () => {
    const postgres = counting(() => sleep(50));
    const redis = counting(() => sleep(20));
    const url = await serve({ postgres, redis });
    const answers = await Promise.all(Array.from({ length: 50 }, () => readyz(url)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers[0]!.body).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
    expect(postgres.calls).toBe(1);
    expect(redis.calls).toBe(1);
  });

  it('serves the result again for cacheMs, then checks once more', async () => {
    let now = 1_000_000;
    const postgres = counting(async () => 1);
    const url = await serve({ postgres }, { cacheMs: 1000, now: () => now });
    for (let i = 0; i < 20; i += 1) await readyz(url);
    expect(postgres.calls).toBe(1);
    now += 999;
    await readyz(url);
    expect(postgres.calls).toBe(1);
    now += 1;
    await Promise.all([readyz(url), readyz(url), readyz(url)]);
    expect(postgres.calls).toBe(2);
  });

  it('a failing dependency is reported 503 to every waiting caller, from one check, and recovery shows after the cache period', async () => {
    let now = 0;
    let down = true;
    const postgres = counting(async () => {
      await sleep(20);
      if (down) throw new Error('connection refused');
    });
    const url = await serve({ postgres }, { cacheMs: 1000, now: () => now });
    const answers = await Promise.all(Array.from({ length: 10 }, () => readyz(url)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(503));
    expect(answers[0]!.body).toEqual({ status: 'not_ready', checks: { postgres: 'unavailable' } });
    expect(postgres.calls).toBe(1);
    down = false;
    expect((await readyz(url)).status).toBe(503);
    now += 1000;
    expect((await readyz(url)).status).toBe(200);
    expect(postgres.calls).toBe(2);
  });

  it('a degradable dependency that fails leaves the process ready (200 degraded); a required one still makes it 503', async () => {
    let redisDown = true;
    let postgresDown = false;
    const postgres = async () => {
      if (postgresDown) throw new Error('connection refused');
    };
    const redis = async () => {
      if (redisDown) throw new Error('connection refused');
    };
    let now = 0;
    const url = await serve({ postgres, redis }, { degradable: ['redis'], now: () => now });
    expect(await readyz(url)).toEqual({ status: 200, body: { status: 'degraded', checks: { postgres: 'ok', redis: 'unavailable' } } });
    postgresDown = true;
    now += 1000;
    expect(await readyz(url)).toEqual({ status: 503, body: { status: 'not_ready', checks: { postgres: 'unavailable', redis: 'unavailable' } } });
    postgresDown = false;
    redisDown = false;
    now += 1000;
    expect(await readyz(url)).toEqual({ status: 200, body: { status: 'ready', checks: { postgres: 'ok', redis: 'ok' } } });
  });

  it('a hanging check times out once for all the callers that wait on it', async () => {
    const postgres = counting(() => new Promise(() => undefined));
    const url = await serve({ postgres }, { timeoutMs: 100 });
    const answers = await Promise.all(Array.from({ length: 10 }, () => readyz(url)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(503));
    expect(postgres.calls).toBe(1);
  });
});
