import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Engine, EngineItem, ItemOutcome } from '@po/engine';
import { createLogger } from '@po/telemetry';
import { createFirstPasses } from './first-pass.js';

function logged() {
  const lines: string[] = [];
  const logger = createLogger({ service: 'api-gateway', destination: new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }) });
  return { logger, lines };
}

/** An engine whose runs end when `release` is called, answering `outcome` or throwing `error`. */
function engineStub(answer: { outcome?: ItemOutcome['kind']; error?: Error }) {
  const runs: EngineItem[][] = [];
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const engine = {
    async run(items: readonly EngineItem[]) {
      runs.push([...items]);
      await gate;
      if (answer.error) throw answer.error;
      return items.map(() => ({ kind: answer.outcome ?? 'pass' }) as ItemOutcome);
    },
  } as unknown as Engine;
  return { engine, runs, release };
}

const options = { maxBatch: 10, maxConcurrent: 1, maxWaiting: 2, inCreation: true };

describe('createFirstPasses (decision 0102)', () => {
  it('runs each creation as a pass item with its cause, and hands nothing over when the pass ran', async () => {
    const { engine, runs, release } = engineStub({ outcome: 'pass' });
    const handed: number[] = [];
    const passes = createFirstPasses(engine, logged().logger, options);
    expect(passes.start(7, 'cause-7', async () => void handed.push(7))).toBe(true);
    release();
    await passes.drain();
    expect(runs).toEqual([[{ kind: 'pass', pipelineId: 7, cause: 'cause-7' }]]);
    expect(handed).toEqual([]);
  });

  it('a failed pass hands its pipeline over once and says so in the log', async () => {
    const { engine, release } = engineStub({ error: new Error('connection reset') });
    const { logger, lines } = logged();
    const handed: number[] = [];
    const passes = createFirstPasses(engine, logger, options);
    passes.start(8, undefined, async () => void handed.push(8));
    release();
    await passes.drain();
    await new Promise((r) => setImmediate(r));
    expect(handed).toEqual([8]);
    expect(lines.join('')).toContain('first pass failed');
  });

  it('a pass that found no pipeline (skipped) hands it over', async () => {
    const { engine, release } = engineStub({ outcome: 'skipped' });
    const handed: number[] = [];
    const passes = createFirstPasses(engine, logged().logger, options);
    passes.start(9, undefined, async () => void handed.push(9));
    release();
    await passes.drain();
    await new Promise((r) => setImmediate(r));
    expect(handed).toEqual([9]);
  });

  it('refuses once maxWaiting passes wait behind the running ones; takes more after they ran', async () => {
    const { engine, runs, release } = engineStub({ outcome: 'pass' });
    const passes = createFirstPasses(engine, logged().logger, options);
    const none = async () => undefined;
    expect(passes.start(1, undefined, none)).toBe(true); // running
    expect(passes.start(2, undefined, none)).toBe(true); // waiting
    expect(passes.start(3, undefined, none)).toBe(true); // waiting
    expect(passes.start(4, undefined, none)).toBe(false);
    release();
    await passes.drain();
    expect(runs.map((r) => r.map((i) => i.pipelineId))).toEqual([[1], [2, 3]]);
    expect(passes.start(5, undefined, none)).toBe(true);
    await passes.drain();
  });

  it('a creation may claim its pass only while no pass runs, waits or is claimed here (decision 0106)', async () => {
    const { engine, release } = engineStub({ outcome: 'pass' });
    const passes = createFirstPasses(engine, logged().logger, options);
    expect(passes.claim()).toBe(true);
    expect(passes.claim()).toBe(false); // the second concurrent creation takes the batched way
    passes.release();
    expect(passes.claim()).toBe(true);
    passes.release();
    passes.start(1, undefined, async () => undefined); // a batched pass under way
    expect(passes.claim()).toBe(false);
    release();
    await passes.drain();
    expect(passes.claim()).toBe(true);
    passes.release();
    expect(createFirstPasses(engine, logged().logger, { ...options, inCreation: false }).claim()).toBe(false);
    expect(createFirstPasses(engine, logged().logger, { ...options, maxWaiting: 0 }).claim()).toBe(false);
  });
});
