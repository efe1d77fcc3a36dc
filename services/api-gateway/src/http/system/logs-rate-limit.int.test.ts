// The rate limit of the anonymous POST /logs (issue 10 item 6, decision 0083): a token bucket per
// client address, answered with 429 `rate_limited` problem+json and Retry-After.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, problemDetailsSchema } from '@po/contracts';
import { startGateway, type Gateway } from '../../testing/harness.js';

let gw: Gateway;
/** The gateway's clock: frozen, so no token comes back while the test runs unless it moves it. */
let now = new Date('2030-01-01T00:00:00Z');
// 6 a minute: one token every 10 s, so the wait is a number only this setting gives.
const limit = { ratePerMinute: 6, burst: 5 };

beforeAll(async () => {
  gw = await startGateway({ clock: () => now, logsAnonLimit: limit });
});
afterAll(async () => {
  await gw?.close();
});

const problemShape = compile(problemDetailsSchema, { normalise: false });
const log = (forwardedFor: string, message = 'line') =>
  gw.call('POST', '/logs', {
    key: null,
    json: { message },
    headers: { 'x-forwarded-for': forwardedFor },
  });

describe('POST /logs rate limit (LOGS_ANON_RATE_PER_MINUTE, LOGS_ANON_BURST)', () => {
  it('the burst + 1-th request from one address gets 429 rate_limited with Retry-After, and stores nothing', async () => {
    for (let i = 0; i < limit.burst; i++) expect((await log('198.51.100.1')).status).toBe(200);
    const before = await gw.db.systemLog.count();

    const refused = await log('198.51.100.1', 'one too many');

    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.headers.get('retry-after')).toBe('10');
    const checked = problemShape(refused.body);
    expect(checked.ok ? [] : checked.errors).toEqual([]);
    expect(refused.body).toMatchObject({ status: 429, code: 'rate_limited', instance: '/logs' });
    expect(await gw.db.systemLog.count()).toBe(before);
  });

  it('another address is unaffected', async () => {
    expect((await log('198.51.100.1')).status).toBe(429);
    for (let i = 0; i < limit.burst; i++) expect((await log('198.51.100.2')).status).toBe(200);
    expect((await log('198.51.100.2')).status).toBe(429);
  });

  it('counts the address the proxy appended: entries the client put in front of it change nothing', async () => {
    expect((await log('203.0.113.77, 198.51.100.1')).status).toBe(429);
    expect((await log('10.9.8.7, 198.51.100.1')).status).toBe(429);
  });

  it('is refused before the body is read: a malformed body gets the same 429', async () => {
    const raw = await gw.call('POST', '/logs', {
      key: null,
      raw: '{"message":',
      headers: { 'x-forwarded-for': '198.51.100.1', 'content-type': 'application/json' },
    });
    expect(raw.status).toBe(429);
  });

  it('the bucket refills at the rate: after Retry-After seconds one more request passes', async () => {
    now = new Date(now.getTime() + 10_000);
    expect((await log('198.51.100.1')).status).toBe(200);
    expect((await log('198.51.100.1')).status).toBe(429);
  });

  it('other endpoints are not limited', async () => {
    for (let i = 0; i < limit.burst + 2; i++) {
      expect(
        (
          await gw.call('GET', '/version', {
            key: null,
            headers: { 'x-forwarded-for': '198.51.100.1' },
          })
        ).status,
      ).toBe(200);
    }
  });
});
