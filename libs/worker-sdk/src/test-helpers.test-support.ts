// Shared set-up for the worker tests: a fake gateway and a worker with short intervals.
import { afterEach, beforeEach } from 'vitest';
import { API_KEY, FakeGateway } from './fake-gateway.test-support.js';
import { createWorker, silentLogger } from './index.js';
import type { StageHandler, Worker, WorkerOptions } from './index.js';

export interface Harness {
  gw: FakeGateway;
  start(handlers: Record<string, StageHandler>, extra?: Partial<WorkerOptions>): Promise<Worker>;
}

/** Registers beforeEach/afterEach hooks; the harness fields are valid inside tests. */
export function useHarness(): Harness {
  let worker: Worker | undefined;
  const harness = {
    gw: undefined as unknown as FakeGateway,
    async start(handlers: Record<string, StageHandler>, extra: Partial<WorkerOptions> = {}) {
      worker = createWorker({
        baseUrl: harness.gw.url,
        apiKey: API_KEY,
        instanceId: 'test-worker',
        handlers,
        waitSeconds: 1,
        logger: silentLogger,
        leaseRenewIntervalMs: 5_000,
        heartbeatIntervalMs: 5_000,
        eventFlushIntervalMs: 20,
        retryBaseDelayMs: 10,
        retryMaxDelayMs: 40,
        requestTimeoutMs: 2_000,
        drainTimeoutMs: 1_000,
        abortGraceMs: 300,
        ...extra,
      });
      await worker.start();
      return worker;
    },
  };
  beforeEach(async () => {
    harness.gw = await new FakeGateway().start();
  });
  afterEach(async () => {
    await worker?.stop({ timeoutMs: 100 });
    worker = undefined;
    await harness.gw.close();
  });
  return harness;
}

/** A promise with its resolve function, for handlers the test releases. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

export const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const refusal = (reason: string) => ({
  status: 200,
  body: { acquired: false, attempt: null, leaseExpiresAt: null, reason },
});
