// The lifecycle event batcher, and the SDK's wire types against the server's contracts.
import type * as Server from '@po/contracts';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ApiError, TransportError } from './errors.js';
import { EventBatcher } from './events.js';
import { silentLogger } from './logger.js';
import type * as Sdk from './protocol.js';

describe('EventBatcher', () => {
  const make = (send: (events: Sdk.WorkerEvent[]) => Promise<void>, maxBuffered = 1000) =>
    new EventBatcher(send, silentLogger, { enabled: true, flushIntervalMs: 1000, maxBuffered });

  it('sends batches of at most 100, with `at` filled in', async () => {
    const sent: Sdk.WorkerEvent[][] = [];
    const batcher = make(async (events) => void sent.push(events));
    for (let i = 0; i < 250; i++) batcher.push({ kind: 'custom', message: `${i}` });
    await batcher.flush();
    expect(sent.map((b) => b.length)).toEqual([100, 100, 50]);
    expect(sent[0]?.[0]?.at).toMatch(/Z$/);
  });

  it('keeps events while the server is unreachable and drops the oldest beyond the buffer', async () => {
    let fail = true;
    const sent: Sdk.WorkerEvent[] = [];
    const batcher = make(async (events) => {
      if (fail) throw new TransportError('POST', '/workers/events', false, new Error('down'));
      sent.push(...events);
    }, 150);
    for (let i = 0; i < 200; i++) batcher.push({ kind: 'custom', message: `${i}` });
    await batcher.flush();
    expect(batcher.pending).toBe(150);
    fail = false;
    await batcher.flush();
    expect(sent.map((e) => e.message)).toEqual(Array.from({ length: 150 }, (_, i) => `${i + 50}`));
  });

  it('drops a batch the server rejects with 400 and goes on', async () => {
    const sent: Sdk.WorkerEvent[][] = [];
    let calls = 0;
    const batcher = make(async (events) => {
      if (calls++ === 0)
        throw new ApiError(
          'POST',
          '/workers/events',
          400,
          'validation_failed',
          undefined,
          undefined,
        );
      sent.push(events);
    });
    for (let i = 0; i < 101; i++) batcher.push({ kind: 'custom' });
    await batcher.flush();
    expect(sent.map((b) => b.length)).toEqual([1]);
  });

  it('push never throws and does nothing when disabled', async () => {
    const batcher = new EventBatcher(() => Promise.reject(new Error('x')), silentLogger, {
      enabled: false,
      flushIntervalMs: 10,
    });
    batcher.push({ kind: 'error' });
    expect(batcher.pending).toBe(0);
    await batcher.close(10);
  });
});

describe('wire types', () => {
  it('what the server sends fits the SDK types', () => {
    expectTypeOf<Server.StageNextMessage>().toExtend<Sdk.StageNextMessage>();
    expectTypeOf<Server.PullJobResponse>().toExtend<Sdk.PullJobResponse>();
    expectTypeOf<Server.BootstrapResponse>().toExtend<Sdk.BootstrapResponse>();
    expectTypeOf<Server.StageLeaseResponse>().toExtend<Sdk.StageLeaseResponse>();
    expectTypeOf<Server.StageResultAccepted>().toExtend<Sdk.StageResultAccepted>();
  });

  it('what the SDK sends fits the server types', () => {
    // Free-form objects (metadata, data) are `unknown`-valued in the SDK, JSON-valued on the server.
    expectTypeOf<Omit<Sdk.BootstrapRequest, 'metadata'>>().toExtend<Server.BootstrapRequest>();
    expectTypeOf<Sdk.HeartbeatRequest>().toExtend<Server.HeartbeatRequest>();
    expectTypeOf<Omit<Sdk.WorkerEvent, 'data'>>().toExtend<Server.WorkerEvent>();
    expectTypeOf<Sdk.StageLeaseRequest>().toExtend<Server.StageLeaseRequest>();
    expectTypeOf<Omit<Sdk.StageResultSubmit, 'appendedStages' | 'logs'>>().toExtend<
      Omit<Server.StageResultSubmit, 'appendedStages' | 'logs'>
    >();
    expectTypeOf<Sdk.StageResultLog>().toExtend<Server.StageResultLog>();
    expectTypeOf<Sdk.ContextItemUpdate>().toExtend<Server.ContextItemInput>();
    expect(true).toBe(true);
  });
});
