import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { STAGE_STATUSES } from '../statuses.js';
import type { StageNode } from './readiness.js';
import { isDoomed, isReady, planDispatch } from './readiness.js';

const NOW = new Date('2025-03-01T12:00:00.000Z');
const NAMES = ['a', 'b', 'c', 'd'] as const;

const stageShape = fc.record({
  name: fc.constantFrom(...NAMES),
  status: fc.constantFrom(...STAGE_STATUSES),
  runNextIfFailed: fc.boolean(),
  dependsOn: fc.subarray([...NAMES]),
  retryOffsetMs: fc.option(fc.integer({ min: -2000, max: 2000 }), { nil: null }),
  idGap: fc.integer({ min: 1, max: 3 }),
});

/** Pipelines of 1..12 stages whose ids increase with position (§6), given in any order. */
const pipelines = fc.array(stageShape, { minLength: 1, maxLength: 12 }).chain((shapes) => {
  let id = 0;
  const stages = shapes.map((s, position): StageNode => {
    id += s.idGap;
    return {
      id,
      position,
      name: s.name,
      status: s.status,
      runNextIfFailed: s.runNextIfFailed,
      dependsOn: s.dependsOn,
      nextRetryAt: s.retryOffsetMs === null ? null : new Date(NOW.getTime() + s.retryOffsetMs),
    };
  });
  return fc.shuffledSubarray(stages, { minLength: stages.length });
});
const slotsArb = fc.option(fc.integer({ min: 0, max: 5 }), { nil: null });

function withStatus(stages: StageNode[], idsToSet: number[], status: StageNode['status']): StageNode[] {
  const set = new Set(idsToSet);
  return stages.map((s) => (set.has(s.id) ? { ...s, status } : s));
}
function byId(stages: StageNode[], id: number): StageNode {
  const s = stages.find((x) => x.id === id);
  if (!s) throw new Error(`no stage ${id}`);
  return s;
}
function isCandidate(stages: StageNode[], s: StageNode): boolean {
  if (s.status === 'NotStarted') return isReady(stages, s);
  if (s.status === 'RetryScheduled') return s.nextRetryAt === null || s.nextRetryAt <= NOW;
  return s.status === 'Throttled';
}

describe('planDispatch properties (addendum §7, §9)', () => {
  it('never dispatches a stage that is not ready (NotStarted ready after skips, Throttled, or a due retry)', () => {
    fc.assert(
      fc.property(pipelines, slotsArb, (stages, slots) => {
        const plan = planDispatch(stages, NOW, slots);
        const after = withStatus(stages, plan.skip, 'Skipped');
        for (const id of [...plan.dispatch, ...plan.throttle]) {
          expect(isCandidate(after, byId(after, id))).toBe(true);
        }
      }),
    );
  });

  it('never dispatches more than slots, and fills the slots it can (oldest id first)', () => {
    fc.assert(
      fc.property(pipelines, slotsArb, (stages, slots) => {
        const plan = planDispatch(stages, NOW, slots);
        const after = withStatus(stages, plan.skip, 'Skipped');
        const candidates = after.filter((s) => isCandidate(after, s)).map((s) => s.id);
        for (const list of [plan.skip, plan.dispatch, plan.throttle]) expect(list).toEqual([...list].sort((x, y) => x - y));
        if (slots !== null) expect(plan.dispatch.length).toBeLessThanOrEqual(slots);
        expect(plan.dispatch.length).toBe(slots === null ? candidates.length : Math.min(slots, candidates.length));
        const left = candidates.filter((id) => !plan.dispatch.includes(id));
        for (const d of plan.dispatch) for (const l of left) expect(d).toBeLessThan(l);
        expect(plan.dispatch).toEqual([...plan.dispatch].sort((x, y) => x - y));
      }),
    );
  });

  it('skip, dispatch and throttle are disjoint; only NotStarted stages are skipped; no Throttled stage is re-throttled', () => {
    fc.assert(
      fc.property(pipelines, slotsArb, (stages, slots) => {
        const plan = planDispatch(stages, NOW, slots);
        const all = [...plan.skip, ...plan.dispatch, ...plan.throttle];
        expect(new Set(all).size).toBe(all.length);
        for (const id of plan.skip) expect(byId(stages, id).status).toBe('NotStarted');
        for (const id of plan.throttle) expect(byId(stages, id).status).not.toBe('Throttled');
      }),
    );
  });

  it('after applying the plan no NotStarted stage is doomed (doom reaches a fixpoint), and without a cap none is left ready', () => {
    fc.assert(
      fc.property(pipelines, slotsArb, (stages, slots) => {
        const plan = planDispatch(stages, NOW, slots);
        let after = withStatus(stages, plan.skip, 'Skipped');
        after = withStatus(after, plan.dispatch, 'Pending');
        after = withStatus(after, plan.throttle, 'Throttled');
        for (const s of after.filter((x) => x.status === 'NotStarted')) {
          expect(isDoomed(after, s)).toBe(false);
          if (slots === null) expect(isReady(after, s)).toBe(false);
        }
        if (slots === null) expect(after.some((s) => s.status === 'Throttled')).toBe(false);
      }),
    );
  });

  it('a stage is never both ready and doomed', () => {
    fc.assert(
      fc.property(pipelines, (stages) => {
        for (const s of stages) expect(isReady(stages, s) && isDoomed(stages, s)).toBe(false);
      }),
    );
  });
});
