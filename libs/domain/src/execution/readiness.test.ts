import { describe, expect, it } from 'vitest';
import type { StageStatus } from '../statuses.js';
import type { StageNode } from './readiness.js';
import { dependenciesOf, isDoomed, isReady, planDispatch } from './readiness.js';

/** Stage ids are 10 × (position + 1), so ids increase with position (§6). */
function pipeline(...defs: [name: string, status: StageStatus, opts?: Partial<StageNode>][]): StageNode[] {
  return defs.map(([name, status, opts], position) => ({
    id: 10 * (position + 1),
    position,
    name,
    status,
    runNextIfFailed: false,
    dependsOn: [],
    nextRetryAt: null,
    ...opts,
  }));
}
const at = (stages: StageNode[], i: number): StageNode => stages[i] as StageNode;
const ids = (stages: StageNode[]) => stages.map((s) => s.id);
const NOW = new Date('2025-03-01T12:00:00.000Z');

describe('dependencies (addendum §6, §7)', () => {
  it('empty dependsOn depends on all earlier stages', () => {
    const s = pipeline(['a', 'Completed'], ['b', 'Completed'], ['c', 'NotStarted'], ['d', 'NotStarted']);
    expect(ids(dependenciesOf(s, at(s, 2)))).toEqual([10, 20]);
    expect(ids(dependenciesOf(s, at(s, 0)))).toEqual([]);
  });

  it('a name matching several earlier stages depends on all of them, and never on later ones', () => {
    const s = pipeline(
      ['x', 'Completed'],
      ['y', 'Completed'],
      ['x', 'Completed'],
      ['z', 'NotStarted', { dependsOn: ['x'] }],
      ['x', 'NotStarted'],
    );
    expect(ids(dependenciesOf(s, at(s, 3)))).toEqual([10, 30]);
  });

  it('several names select the union of the earlier stages they name, in position order', () => {
    const s = pipeline(['a', 'Completed'], ['b', 'Completed'], ['c', 'Completed'], ['d', 'NotStarted', { dependsOn: ['c', 'a'] }]);
    expect(ids(dependenciesOf(s, at(s, 3)))).toEqual([10, 30]);
  });

  it('a stage never depends on itself, even when it names itself', () => {
    const s = pipeline(['a', 'Completed'], ['a', 'NotStarted', { dependsOn: ['a'] }]);
    expect(ids(dependenciesOf(s, at(s, 1)))).toEqual([10]);
  });

  it('uses position, not array order, and returns the dependencies in position order', () => {
    const s = pipeline(['a', 'Completed'], ['b', 'Completed'], ['c', 'NotStarted']).reverse();
    expect(ids(dependenciesOf(s, at(s, 0)))).toEqual([10, 20]);
  });
});

describe('Ready (addendum §7)', () => {
  it('a stage with no dependencies is ready', () => {
    const s = pipeline(['a', 'NotStarted']);
    expect(isReady(s, at(s, 0))).toBe(true);
  });

  it('is ready when all dependencies are Completed', () => {
    const s = pipeline(['a', 'Completed'], ['b', 'Completed'], ['c', 'NotStarted']);
    expect(isReady(s, at(s, 2))).toBe(true);
  });

  it('is not ready while a dependency is not terminal', () => {
    for (const st of ['NotStarted', 'Pending', 'Running', 'RetryScheduled', 'Throttled', 'WaitingForApproval'] as const) {
      const s = pipeline(['a', 'Completed'], ['b', st], ['c', 'NotStarted', { runNextIfFailed: true }]);
      expect(isReady(s, at(s, 2))).toBe(false);
    }
  });

  it.each(['Failed', 'Skipped', 'Cancelled'] as const)(
    'runNextIfFailed continues after a %s dependency once all dependencies are terminal',
    (st) => {
      const s = pipeline(['a', st], ['b', 'Completed'], ['c', 'NotStarted', { runNextIfFailed: true }]);
      expect(isReady(s, at(s, 2))).toBe(true);
      expect(isDoomed(s, at(s, 2))).toBe(false);
    },
  );

  it('runNextIfFailed waits while another dependency still runs', () => {
    const s = pipeline(['a', 'Failed'], ['b', 'Running'], ['c', 'NotStarted', { runNextIfFailed: true }]);
    expect(isReady(s, at(s, 2))).toBe(false);
    expect(isDoomed(s, at(s, 2))).toBe(false);
  });

  it('without runNextIfFailed a Failed dependency does not make the stage ready', () => {
    const s = pipeline(['a', 'Failed'], ['b', 'NotStarted']);
    expect(isReady(s, at(s, 1))).toBe(false);
  });

  it('only the named dependencies count: a failed stage not named does not matter', () => {
    const s = pipeline(['a', 'Completed'], ['b', 'Failed'], ['c', 'NotStarted', { dependsOn: ['a'] }]);
    expect(isReady(s, at(s, 2))).toBe(true);
    expect(isDoomed(s, at(s, 2))).toBe(false);
  });

  it('a name matching several earlier stages needs all of them Completed', () => {
    const s = pipeline(['x', 'Completed'], ['x', 'Running'], ['y', 'NotStarted', { dependsOn: ['x'] }]);
    expect(isReady(s, at(s, 2))).toBe(false);
  });
});

describe('Doomed (addendum §7)', () => {
  it.each(['Failed', 'Skipped', 'Cancelled'] as const)('a %s dependency dooms a stage without runNextIfFailed', (st) => {
    const s = pipeline(['a', st], ['b', 'NotStarted']);
    expect(isDoomed(s, at(s, 1))).toBe(true);
  });

  it('is doomed at once, even while another dependency still runs', () => {
    const s = pipeline(['a', 'Running'], ['b', 'Failed'], ['c', 'NotStarted']);
    expect(isDoomed(s, at(s, 2))).toBe(true);
  });

  it('a runNextIfFailed stage is never doomed', () => {
    const s = pipeline(['a', 'Failed'], ['b', 'NotStarted', { runNextIfFailed: true }]);
    expect(isDoomed(s, at(s, 1))).toBe(false);
  });

  it('Completed or unfinished dependencies do not doom', () => {
    const s = pipeline(['a', 'Completed'], ['b', 'RetryScheduled'], ['c', 'NotStarted']);
    expect(isDoomed(s, at(s, 2))).toBe(false);
  });

  it('a stage with a name matching a Failed earlier stage is doomed even if another match Completed', () => {
    const s = pipeline(['x', 'Completed'], ['x', 'Failed'], ['y', 'NotStarted', { dependsOn: ['x'] }]);
    expect(isDoomed(s, at(s, 2))).toBe(true);
  });
});

describe('planDispatch (addendum §7, §9)', () => {
  it('dispatches the first stage of a fresh pipeline, and only it (later stages wait)', () => {
    const s = pipeline(['a', 'NotStarted'], ['b', 'NotStarted'], ['c', 'NotStarted']);
    expect(planDispatch(s, NOW, null)).toEqual({ skip: [], dispatch: [10], throttle: [] });
  });

  it('parallel branches: two stages depending on the same root are both dispatched in one pass', () => {
    const s = pipeline(
      ['root', 'Completed'],
      ['left', 'NotStarted', { dependsOn: ['root'] }],
      ['right', 'NotStarted', { dependsOn: ['root'] }],
      ['join', 'NotStarted', { dependsOn: ['left', 'right'] }],
    );
    expect(planDispatch(s, NOW, null)).toEqual({ skip: [], dispatch: [20, 30], throttle: [] });
  });

  it('doom propagates along a chain to a fixpoint: a stage doomed only by another Skipped one is skipped too', () => {
    const s = pipeline(
      ['a', 'Failed'],
      ['b', 'NotStarted', { dependsOn: ['a'] }],
      ['c', 'NotStarted', { dependsOn: ['b'] }],
      ['d', 'NotStarted', { dependsOn: ['c'] }],
    );
    expect(planDispatch(s, NOW, null)).toEqual({ skip: [20, 30, 40], dispatch: [], throttle: [] });
  });

  it('propagation does not depend on the order stages are given in', () => {
    const s = pipeline(
      ['a', 'Failed'],
      ['b', 'NotStarted', { dependsOn: ['a'] }],
      ['c', 'NotStarted', { dependsOn: ['b'] }],
    ).reverse();
    expect(planDispatch(s, NOW, null).skip).toEqual([20, 30]);
  });

  it('stages doomed in the same round are listed in ascending id order whatever the input order', () => {
    const s = pipeline(['a', 'Failed'], ['b', 'NotStarted', { dependsOn: ['a'] }], ['c', 'NotStarted', { dependsOn: ['a'] }]).reverse();
    expect(planDispatch(s, NOW, null).skip).toEqual([20, 30]);
  });

  it('runNextIfFailed after a doomed→Skipped stage becomes ready in the same pass', () => {
    const s = pipeline(
      ['a', 'Failed'],
      ['b', 'NotStarted'],
      ['c', 'NotStarted', { runNextIfFailed: true }],
      ['d', 'NotStarted', { dependsOn: ['c'] }],
      ['e', 'NotStarted'],
    );
    // d waits for c; e depends on all earlier stages, a Failed one included, so it is doomed too.
    expect(planDispatch(s, NOW, null)).toEqual({ skip: [20, 50], dispatch: [30], throttle: [] });
  });

  it('a branch off a Completed stage is dispatched while a failed sibling branch is skipped', () => {
    const s = pipeline(
      ['root', 'Completed'],
      ['bad', 'Failed', { dependsOn: ['root'] }],
      ['afterBad', 'NotStarted', { dependsOn: ['bad'] }],
      ['good', 'NotStarted', { dependsOn: ['root'] }],
    );
    expect(planDispatch(s, NOW, null)).toEqual({ skip: [30], dispatch: [40], throttle: [] });
  });

  it('Throttled stages are dispatched when there is room (they were ready)', () => {
    const s = pipeline(['a', 'Running'], ['b', 'Throttled', { dependsOn: [] }]);
    expect(planDispatch(s, NOW, 1)).toEqual({ skip: [], dispatch: [20], throttle: [] });
  });

  it('RetryScheduled stages are dispatched once due (now ≥ nextRetryAt), not before', () => {
    const due = new Date(NOW.getTime());
    const later = new Date(NOW.getTime() + 1);
    const s = pipeline(['a', 'RetryScheduled', { nextRetryAt: due }], ['b', 'RetryScheduled', { nextRetryAt: later, dependsOn: [] }]);
    expect(planDispatch(s, NOW, null)).toEqual({ skip: [], dispatch: [10], throttle: [] });
  });

  it('a RetryScheduled stage without nextRetryAt counts as due', () => {
    const s = pipeline(['a', 'RetryScheduled']);
    expect(planDispatch(s, NOW, null).dispatch).toEqual([10]);
  });

  it('slots cap the dispatch oldest stage id first; ready NotStarted and due retries that do not fit become Throttled', () => {
    const s = pipeline(
      ['root', 'Completed'],
      ['r', 'RetryScheduled', { dependsOn: ['root'], nextRetryAt: NOW }],
      ['t', 'Throttled', { dependsOn: ['root'] }],
      ['n1', 'NotStarted', { dependsOn: ['root'] }],
      ['n2', 'NotStarted', { dependsOn: ['root'] }],
    );
    expect(planDispatch(s, NOW, 2)).toEqual({ skip: [], dispatch: [20, 30], throttle: [40, 50] });
  });

  it('a Throttled stage that does not fit stays Throttled and is not listed', () => {
    const s = pipeline(['root', 'Completed'], ['t1', 'Throttled', { dependsOn: ['root'] }], ['t2', 'Throttled', { dependsOn: ['root'] }]);
    expect(planDispatch(s, NOW, 1)).toEqual({ skip: [], dispatch: [20], throttle: [] });
  });

  it('an older NotStarted stage goes before a younger Throttled one', () => {
    const s = [
      { id: 1, position: 0, name: 'a', status: 'NotStarted', runNextIfFailed: false, dependsOn: [], nextRetryAt: null },
      { id: 2, position: 1, name: 'b', status: 'Throttled', runNextIfFailed: false, dependsOn: ['x'], nextRetryAt: null },
    ] satisfies StageNode[];
    expect(planDispatch(s, NOW, 1)).toEqual({ skip: [], dispatch: [1], throttle: [] });
  });

  it('no slots: nothing is dispatched, ready stages are Throttled; doom still propagates', () => {
    const s = pipeline(['a', 'Failed'], ['b', 'NotStarted'], ['c', 'NotStarted', { runNextIfFailed: true }]);
    expect(planDispatch(s, NOW, 0)).toEqual({ skip: [20], dispatch: [], throttle: [30] });
    expect(planDispatch(s, NOW, -3)).toEqual({ skip: [20], dispatch: [], throttle: [30] });
  });

  it('a negative slot count (cap lowered below the active count) dispatches nothing', () => {
    const s = pipeline(['root', 'Completed'], ['a', 'NotStarted', { dependsOn: ['root'] }], ['b', 'NotStarted', { dependsOn: ['root'] }], ['c', 'Throttled', { dependsOn: ['root'] }]);
    expect(planDispatch(s, NOW, -1)).toEqual({ skip: [], dispatch: [], throttle: [20, 30] });
  });

  it('oldest stage id first whatever order the stages are given in; lists are in ascending id order', () => {
    const s = pipeline(['root', 'Completed'], ['a', 'NotStarted', { dependsOn: ['root'] }], ['b', 'NotStarted', { dependsOn: ['root'] }], ['c', 'NotStarted', { dependsOn: ['root'] }]).reverse();
    expect(planDispatch(s, NOW, 1)).toEqual({ skip: [], dispatch: [20], throttle: [30, 40] });
    expect(planDispatch(s, NOW, null)).toEqual({ skip: [], dispatch: [20, 30, 40], throttle: [] });
  });

  it('stages that are Pending, Running, WaitingForApproval or terminal are left alone', () => {
    const s = pipeline(['a', 'Pending'], ['b', 'Running', { dependsOn: [] }], ['c', 'WaitingForApproval', { dependsOn: [] }]);
    expect(planDispatch(s, NOW, null)).toEqual({ skip: [], dispatch: [], throttle: [] });
  });
});
