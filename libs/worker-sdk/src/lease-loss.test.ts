// A worker whose lease is refused, runs out, or outlasts an outage, against the fake gateway.
import { describe, expect, it } from 'vitest';
import { dropped } from './fake-gateway.test-support.js';
import type { Recorded } from './fake-gateway.test-support.js';
import { httpFetch, LeaseLostError } from './index.js';
import type { FetchLike, HandlerContext } from './index.js';
import { delay, useHarness } from './test-helpers.test-support.js';

const h = useHarness();

/** Waits for ctx.signal; returns its reason and when it fired (performance.now()). */
async function aborted(ctx: HandlerContext): Promise<{ reason: unknown; at: number }> {
  await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
  return { reason: ctx.signal.reason, at: performance.now() };
}

const leaseLostEvents = (calls: Recorded[]) =>
  calls.flatMap((c) => c.body.events).filter((e: { kind: string }) => e.kind === 'lease_lost');

describe('a renewal the gateway refuses', () => {
  it.each([
    [409, 'stale_execution'],
    [404, 'not_found'],
  ])(
    'answered %i: ctx.signal aborts with LEASE_LOST, no result is posted, the delivery is acked',
    async (status, code) => {
      const { gw } = h;
      let seen: { reason: unknown } | undefined;
      gw.on('renew', () => ({ status, body: { code, detail: 'not yours' } }));
      await h.start(
        {
          job: async (ctx) => {
            seen = await aborted(ctx);
            return 'too late';
          },
        },
        { leaseRenewIntervalMs: 30 },
      );
      const message = gw.enqueue('job');
      await gw.until(() => gw.acks.length === 1);
      expect(seen?.reason).toBeInstanceOf(LeaseLostError);
      expect(seen?.reason).toMatchObject({ code: 'LEASE_LOST', reason: code });
      expect(gw.calls(`/stages/${message.stageId}/lease/renew`)).toHaveLength(1);
      expect(gw.calls(/\/result$/)).toHaveLength(0);
      expect(gw.acks[0]).toMatchObject({ requeue: false, stageId: message.stageId });
      await gw.until(() => leaseLostEvents(gw.calls('/workers/events')).length === 1);
    },
  );

  it('a handler that ignores the abort loses its slot after abortGraceMs: the next delivery runs, and nothing of the first is posted', async () => {
    const { gw } = h;
    gw.on('renew', (req) =>
      req.path === `/stages/${first.stageId}/lease/renew`
        ? {
            status: 200,
            body: { acquired: false, attempt: null, leaseExpiresAt: null, reason: 'lease_expired' },
          }
        : undefined,
    );
    const ran: number[] = [];
    const worker = await h.start(
      {
        job: async (ctx) => {
          ran.push(ctx.stage.stageId);
          if (ctx.stage.stageId === first.stageId) await delay(5_000); // deaf to ctx.signal
          return 'done';
        },
      },
      { concurrency: 1, leaseRenewIntervalMs: 30, abortGraceMs: 100 },
    );
    const first = gw.enqueue('job');
    const second = gw.enqueue('job');
    await gw.until(() => gw.calls(`/stages/${second.stageId}/result`).length === 1);
    expect(ran).toEqual([first.stageId, second.stageId]);
    expect(gw.calls(`/stages/${first.stageId}/result`)).toHaveLength(0);
    expect(gw.acks.find((a) => a.stageId === first.stageId)).toMatchObject({ requeue: false });
    expect(worker.stats.inFlight).toBeLessThanOrEqual(1);
  });
});

describe('renewals that do not get through (503, network errors)', () => {
  it('are retried while the lease lasts, and ctx.signal aborts once it has run out on the SDK clock, not before', async () => {
    const { gw } = h;
    const leaseMs = 1_500;
    gw.leaseMs = leaseMs;
    let failures = 0;
    gw.on('renew', () =>
      ++failures % 2 === 0 ? dropped : { status: 503, body: { code: 'unavailable' } },
    );
    // When each acquire left the worker: the lease cannot end before that plus leaseMs.
    const acquiresSent: number[] = [];
    const fetch: FetchLike = (url, init) => {
      if (url.endsWith('/lease/acquire')) acquiresSent.push(performance.now());
      return httpFetch(url, init);
    };
    let seen: { reason: unknown; at: number } | undefined;
    let failuresBeforeAbort = 0;
    await h.start(
      {
        job: async (ctx) => {
          seen = await aborted(ctx);
          failuresBeforeAbort = failures;
          throw ctx.signal.reason;
        },
      },
      { leaseDurationMs: leaseMs, leaseRenewIntervalMs: 400, fetch },
    );
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1, 5_000);
    expect(seen?.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'lapsed' });
    expect(acquiresSent).toHaveLength(1);
    expect(seen!.at - acquiresSent[0]!).toBeGreaterThanOrEqual(leaseMs - 1);
    // Several failed renewals, 503 and dropped connections both, did not abort it on their own.
    expect(failuresBeforeAbort).toBeGreaterThanOrEqual(4);
    expect(gw.calls(`/stages/${message.stageId}/result`)).toHaveLength(0);
    expect(gw.acks[0]).toMatchObject({ requeue: false, stageId: message.stageId });
  });
});

describe('renewals that fail for a while, then get through', () => {
  it('keep the handler running past the first lease, and its result is posted', async () => {
    const { gw } = h;
    const leaseMs = 1_000;
    gw.leaseMs = leaseMs;
    let renewals = 0;
    gw.on('renew', () => {
      renewals += 1;
      if (renewals === 2) return dropped;
      return renewals <= 3 ? { status: 503, body: { code: 'unavailable' } } : undefined;
    });
    let abortedWhileRunning = false;
    const worker = await h.start(
      {
        job: async (ctx) => {
          await delay(2 * leaseMs);
          abortedWhileRunning = ctx.signal.aborted;
          return 'done';
        },
      },
      { leaseDurationMs: leaseMs, leaseRenewIntervalMs: 300 },
    );
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1, 5_000);
    expect(abortedWhileRunning).toBe(false);
    const renewed = gw.calls(`/stages/${message.stageId}/lease/renew`);
    expect(renewed.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(gw.calls(`/stages/${message.stageId}/result`)).toEqual([
      expect.objectContaining({
        status: 202,
        body: expect.objectContaining({ isSuccess: true, result: 'done' }),
      }),
    ]);
    expect(worker.stats.processed).toBe(1);
    expect(leaseLostEvents(gw.calls('/workers/events'))).toHaveLength(0);
  });
});

describe('a result the gateway cannot take for longer than the lease (503 broker_unavailable)', () => {
  it('is re-sent while renewals go on, and accepted once in the end', async () => {
    const { gw } = h;
    const leaseMs = 1_000;
    gw.leaseMs = leaseMs;
    let firstResultAt: number | undefined;
    gw.on('result', (req) => {
      firstResultAt ??= req.receivedAt;
      return req.receivedAt - firstResultAt < 2 * leaseMs
        ? { status: 503, body: { code: 'broker_unavailable' } }
        : undefined;
    });
    let ran = 0;
    const worker = await h.start(
      { job: () => `run ${++ran}` },
      { leaseDurationMs: leaseMs, leaseRenewIntervalMs: 300 },
    );
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1, 6_000);
    const results = gw.calls(`/stages/${message.stageId}/result`);
    const accepted = results.filter((r) => r.status === 202);
    expect(accepted).toHaveLength(1);
    expect(results.length).toBeGreaterThan(1);
    expect(results.every((r) => JSON.stringify(r.body) === JSON.stringify(results[0]?.body))).toBe(
      true,
    );
    expect(ran).toBe(1);
    // Renewals kept the lease through the outage: granted ones span more than a lease.
    const renewedDuringOutage = gw
      .calls(`/stages/${message.stageId}/lease/renew`)
      .filter(
        (r) =>
          r.status === 200 &&
          r.receivedAt > firstResultAt! &&
          r.receivedAt < accepted[0]!.receivedAt,
      );
    expect(renewedDuringOutage.length).toBeGreaterThanOrEqual(3);
    expect(worker.stats.processed).toBe(1);
    expect(leaseLostEvents(gw.calls('/workers/events'))).toHaveLength(0);
  });
});
