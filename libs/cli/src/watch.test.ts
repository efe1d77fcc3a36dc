import type { PipelineResponse, PoClient } from '@po/client';
import { ConnectionError } from '@po/client';
import { describe, expect, it } from 'vitest';
import { EXIT } from './errors.js';
import { changes, describeChange, exitCodeFor, watchPipeline, type Change } from './watch.js';

function pipeline(status: string, stages: [number, string, string][]): PipelineResponse {
  return {
    id: 7,
    name: 'release',
    status,
    isTerminal: ['Completed', 'Failed', 'Cancelled'].includes(status),
    stages: stages.map(([id, name, s]) => ({ id, name, status: s })),
  } as unknown as PipelineResponse;
}

describe('watch', () => {
  it('reports every stage at first, then only what changed', () => {
    const first = pipeline('Running', [
      [1, 'build', 'Running'],
      [2, 'test', 'NotStarted'],
    ]);
    expect(changes(undefined, first).map((c) => `${c.name}:${c.from}->${c.to}`)).toEqual([
      'build:null->Running',
      'test:null->NotStarted',
      'release:null->Running',
    ]);
    const second = pipeline('Running', [
      [1, 'build', 'Completed'],
      [2, 'test', 'NotStarted'],
    ]);
    expect(changes(first, second).map((c) => `${c.name}:${c.from}->${c.to}`)).toEqual([
      'build:Running->Completed',
    ]);
    expect(describeChange(changes(first, second)[0]!, new Date('2025-03-01T12:00:05Z'))).toBe(
      '12:00:05  stage build (1): Running → Completed',
    );
  });

  it('exit code from the final status', () => {
    expect(['Completed', 'Failed', 'Cancelled'].map(exitCodeFor)).toEqual([
      EXIT.OK,
      EXIT.FAILED,
      EXIT.CANCELLED,
    ]);
  });

  it('polls until terminal, riding out a failed poll, and stops at the timeout', async () => {
    const readings: (PipelineResponse | Error)[] = [
      pipeline('Running', [[1, 'build', 'Running']]),
      new ConnectionError('GET http://x/pipelines/7', { cause: new Error('ECONNRESET') }),
      pipeline('Completed', [[1, 'build', 'Completed']]),
    ];
    const client = {
      pipelines: {
        get: async () => {
          const next = readings.shift()!;
          if (next instanceof Error) throw next;
          return next;
        },
      },
    } as unknown as PoClient;
    const seen: Change[] = [];
    const retried: string[] = [];
    const done = await watchPipeline(client, 7, {
      intervalMs: 10,
      onChange: (c) => seen.push(c),
      onTransientError: (e) => retried.push(e.message),
      sleep: async () => {},
    });
    expect(done).toMatchObject({ timedOut: false, pipeline: { status: 'Completed' } });
    expect(seen.map((c) => c.to)).toEqual(['Running', 'Running', 'Completed', 'Completed']);
    expect(retried).toHaveLength(1);

    let t = 0;
    const stuck = {
      pipelines: { get: async () => pipeline('Running', [[1, 'build', 'Running']]) },
    } as unknown as PoClient;
    const late = await watchPipeline(stuck, 7, {
      intervalMs: 1000,
      timeoutMs: 2500,
      onChange: () => {},
      onTransientError: () => {},
      now: () => new Date(t),
      sleep: async (ms) => void (t += ms),
    });
    expect(late.timedOut).toBe(true);
    expect(t).toBe(3000);
  });
});
