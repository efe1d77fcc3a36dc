// `po pipelines rerun|cancel` by id or by filters (a bulk operation), and `po operations`, against
// a stand-in client: what each command asks the API, and what it prints (decision 0133).
import type { BulkRerunRequest, OperationView } from '@po/client';
import { describe, expect, it } from 'vitest';
import { runPo } from '../run-po.test-support.js';

const operation = (over: Partial<OperationView> = {}): OperationView => ({
  id: 7,
  kind: 'rerun',
  status: 'Running',
  filter: { status: ['Failed'], name: 'nightly' },
  from: 'failed',
  maxPerSecond: 50,
  matched: 120,
  done: 30,
  failed: 1,
  failures: [
    {
      pipelineId: 41,
      reason:
        'Pipeline 41 is Running; only a Completed, Failed or Cancelled pipeline can be rerun.',
    },
  ],
  createdAt: '2026-11-28T10:00:00.000Z',
  finishedAt: null,
  ...over,
});

async function po(args: string[]) {
  const calls: [string, ...unknown[]][] = [];
  const client = {
    pipelines: {
      rerun: async (id: number, options: unknown) => {
        calls.push(['rerun', id, options]);
        return { id: 900, rerunOf: id, name: 'nightly', status: 'NotStarted' };
      },
      bulkRerun: async (request: BulkRerunRequest) => {
        calls.push(['bulkRerun', request]);
        return request.dryRun ? { matched: 3, sample: [4, 5, 6] } : operation();
      },
      bulkCancel: async (request: unknown) => {
        calls.push(['bulkCancel', request]);
        return operation({ kind: 'cancel', from: null });
      },
    },
    operations: {
      get: async (id: number) => (calls.push(['get', id]), operation({ id })),
      cancel: async (id: number) => (
        calls.push(['cancel', id]),
        operation({ id, status: 'Cancelled' })
      ),
    },
  };
  return { ...(await runPo(client, args)), calls };
}

describe('po pipelines rerun and cancel, one or in bulk', () => {
  it('rerun <id> --from failed asks for a rerun from the failure', async () => {
    const { calls, out } = await po(['pipelines', 'rerun', '12', '--from', 'failed']);
    expect(calls).toEqual([['rerun', 12, { from: 'failed' }]]);
    expect(out).toBe('pipeline 900 created, rerunning 12 (nightly, NotStarted)');
  });

  it('rerun with filters is a bulk rerun: the filters of list, the pace and the dry run', async () => {
    const dry = await po([
      'pipelines',
      'rerun',
      '--status',
      'Failed',
      '--name-prefix',
      'nightly',
      '--since',
      '2h',
      '--dry-run',
    ]);
    expect(dry.calls).toEqual([
      [
        'bulkRerun',
        {
          filter: { status: ['Failed'], name: 'nightly', createdAfter: '2026-11-28T10:00:00.000Z' },
          dryRun: true,
        },
      ],
    ]);
    expect(dry.out).toBe('3 pipelines match (dry run, nothing changed): 4, 5, 6');
    const real = await po([
      'pipelines',
      'rerun',
      '--status',
      'Failed',
      '--keyword',
      'env=prod',
      '--max-per-second',
      '20',
      '--from',
      'start',
    ]);
    expect(real.calls).toEqual([
      [
        'bulkRerun',
        { filter: { status: ['Failed'], keyword: ['env=prod'] }, maxPerSecond: 20, from: 'start' },
      ],
    ]);
    expect(real.out).toBe(
      'operation 7: bulk rerun of 120 pipelines at most 50 a second (po operations show 7)',
    );
  });

  it('cancel with filters is a bulk cancel; an id and filters together, or neither, is a usage error', async () => {
    expect((await po(['pipelines', 'cancel', '--handler', 'payments'])).calls).toEqual([
      ['bulkCancel', { filter: { stageHandlerName: 'payments' } }],
    ]);
    const both = await po(['pipelines', 'rerun', '5', '--status', 'Failed']);
    expect(both.calls).toEqual([]);
    expect(both.err).toContain('give a pipeline id or filters, not both');
    expect(both.code).not.toBe(0);
    const neither = await po(['pipelines', 'cancel']);
    expect(neither.calls).toEqual([]);
    expect(neither.err).toContain('for a bulk operation');
  });
});

describe('po operations', () => {
  it('show: progress, pace and the failures with their reasons', async () => {
    const { calls, out } = await po(['operations', 'show', '7']);
    expect(calls).toEqual([['get', 7]]);
    expect(out).toContain('bulk rerun from the failure');
    expect(out).toContain('30 done, 1 failed, of 120 matched');
    expect(out).toContain('Pipeline 41 is Running');
  });

  it('cancel: stops it', async () => {
    const { calls, out } = await po(['operations', 'cancel', '7']);
    expect(calls).toEqual([['cancel', 7]]);
    expect(out).toBe('operation 7 Cancelled (30 of 120 done)');
  });
});
