import { describe, expect, it } from 'vitest';
import { planTicks, type FireRules, type FireTick } from './fire.js';

const T = new Date('2030-03-04T10:00:00.000Z');
const ticks = (n: number, trigger: FireTick['trigger'] = 'Scheduled'): FireTick[] =>
  Array.from({ length: n }, (_, i) => ({ trigger, tick: new Date(T.getTime() + i * 60_000) }));
const shape = (plans: ReturnType<typeof planTicks>) => plans.map((p) => [p.status, p.reason, p.create, p.replace]);
const rules = (policy: FireRules['policy'], extra: Partial<FireRules> = {}): FireRules => ({ policy, catchupMax: 10, ...extra });

describe('planTicks (§14.5): each tick sees what the earlier ones of the same firing did', () => {
  it('no overlap: every policy creates the first tick', () => {
    for (const policy of ['Skip', 'Queue', 'Replace', 'Allow'] as const) {
      expect(shape(planTicks(rules(policy), { open: 0, queued: 0 }, ticks(1), null))).toEqual([['Created', null, true, false]]);
    }
  });

  it('Skip: the first tick creates, the later ones overlap with its pipeline and are Skipped (overlap)', () => {
    expect(shape(planTicks(rules('Skip'), { open: 0, queued: 0 }, ticks(3), null))).toEqual([
      ['Created', null, true, false],
      ['Skipped', 'overlap', false, false],
      ['Skipped', 'overlap', false, false],
    ]);
  });

  it('Queue: Queued while fewer than catchupMax are, counting those queued before, then Skipped (queue_full)', () => {
    expect(shape(planTicks(rules('Queue', { catchupMax: 3 }), { open: 1, queued: 1 }, ticks(4), null))).toEqual([
      ['Queued', 'overlap', false, false],
      ['Queued', 'overlap', false, false],
      ['Skipped', 'queue_full', false, false],
      ['Skipped', 'queue_full', false, false],
    ]);
  });

  it('Queue on a Paused schedule: a tick that would queue is Skipped (paused)', () => {
    expect(shape(planTicks(rules('Queue', { paused: true }), { open: 0, queued: 0 }, ticks(2, 'Backfill'), null))).toEqual([
      ['Created', null, true, false],
      ['Skipped', 'paused', false, false],
    ]);
  });

  it('Replace: cancels what is open, then creates; each later tick replaces the pipeline of the one before', () => {
    expect(shape(planTicks(rules('Replace'), { open: 2, queued: 0 }, ticks(3), null))).toEqual([
      ['Created', null, true, true],
      ['Created', null, true, true],
      ['Created', null, true, true],
    ]);
    expect(shape(planTicks(rules('Replace'), { open: 0, queued: 0 }, ticks(2), null))).toEqual([
      ['Created', null, true, false],
      ['Created', null, true, true],
    ]);
  });

  it('Allow: creates while earlier pipelines run', () => {
    expect(shape(planTicks(rules('Allow'), { open: 5, queued: 0 }, ticks(2), null))).toEqual([
      ['Created', null, true, false],
      ['Created', null, true, false],
    ]);
  });

  it('a pipeline that cannot be created: Failed with the reason, and no overlap for the next tick', () => {
    const failure = 'creation_failed: /stages/0 nope';
    expect(shape(planTicks(rules('Skip'), { open: 0, queued: 0 }, ticks(2), failure))).toEqual([
      ['Failed', failure, false, false],
      ['Failed', failure, false, false],
    ]);
    // Replace still cancels what was open, then fails; the next tick finds nothing open.
    expect(shape(planTicks(rules('Replace'), { open: 1, queued: 0 }, ticks(2), failure))).toEqual([
      ['Failed', failure, false, true],
      ['Failed', failure, false, false],
    ]);
  });

  it('a Manual trigger ignores overlap, and its pipeline is the overlap of what follows', () => {
    expect(shape(planTicks(rules('Skip'), { open: 3, queued: 0 }, ticks(1, 'Manual'), null))).toEqual([['Created', null, true, false]]);
    const [manual, scheduled] = planTicks(rules('Skip'), { open: 0, queued: 0 }, [...ticks(1, 'Manual'), ...ticks(1)], null);
    expect([manual!.status, scheduled!.status, scheduled!.reason]).toEqual(['Created', 'Skipped', 'overlap']);
  });

  it('keeps each tick’s own fields', () => {
    const own = { trigger: 'Catchup' as const, tick: T, run: 7 };
    const [plan] = planTicks(rules('Allow'), { open: 0, queued: 0 }, [own], null);
    expect(plan).toEqual({ trigger: 'Catchup', tick: T, run: 7, status: 'Created', reason: null, create: true, replace: false });
  });
});
