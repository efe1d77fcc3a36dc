import { describe, expect, it } from 'vitest';
import { admitStages, dispatchBucket, nextTokenAt, type AdmissionCandidate, type AdmissionGates } from './admission.js';

const none: AdmissionGates = { appFree: null, handlers: new Map(), keyLoad: new Map() };
let nextId = 1;
const stage = (over: Partial<AdmissionCandidate> = {}): AdmissionCandidate => ({
  id: nextId++,
  status: 'NotStarted',
  handler: 'h',
  key: null,
  keyLimit: null,
  priority: 3,
  ...over,
});

describe('admitStages (decision 0132)', () => {
  it('without gates every candidate is dispatched, none throttled', () => {
    const c = [stage(), stage({ key: 'a', keyLimit: 5 }), stage()];
    const got = admitStages(c, none);
    expect(got.dispatch.sort((a, b) => a - b)).toEqual(c.map((s) => s.id));
    expect(got.throttle).toEqual([]);
  });

  it('a key never goes over its limit, counting what is already in flight', () => {
    const c = [stage({ key: 'k', keyLimit: 2 }), stage({ key: 'k', keyLimit: 2 }), stage({ key: 'k', keyLimit: 2 })];
    const got = admitStages(c, { ...none, keyLoad: new Map([['k', 1]]) });
    expect(got.dispatch).toEqual([c[0]!.id]);
    expect(got.throttle).toEqual([c[1]!.id, c[2]!.id]);
    expect(got.turns.get(c[0]!.id)).toBe(1);
  });

  it('a key at its limit holds back no one else (work-conserving)', () => {
    const busy = stage({ key: 'busy', keyLimit: 1 });
    const free = stage({ key: 'free', keyLimit: 3 });
    const got = admitStages([busy, free], { ...none, appFree: 5, keyLoad: new Map([['busy', 1]]) });
    expect(got.dispatch).toEqual([free.id]);
    expect(got.throttle).toEqual([busy.id]);
  });

  it('with one key waiting it takes every slot its limit allows', () => {
    const c = Array.from({ length: 10 }, () => stage({ key: 'only', keyLimit: 4 }));
    expect(admitStages(c, { ...none, appFree: 8 }).dispatch).toHaveLength(4);
    expect(admitStages(c, { ...none, appFree: 3 }).dispatch).toHaveLength(3);
  });

  it('keys take turns for shared capacity: a big backlog does not starve small keys', () => {
    const flood = Array.from({ length: 50 }, () => stage({ key: 'flood', keyLimit: 100, status: 'Throttled' }));
    const small = ['a', 'b', 'c'].flatMap((k) => [stage({ key: k, keyLimit: 100 }), stage({ key: k, keyLimit: 100 })]);
    const got = admitStages([...flood, ...small], { ...none, appFree: 8 });
    const keyOf = new Map([...flood, ...small].map((s) => [s.id, s.key]));
    const counts = new Map<string, number>();
    for (const id of got.dispatch) counts.set(keyOf.get(id)!, (counts.get(keyOf.get(id)!) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual({ flood: 2, a: 2, b: 2, c: 2 });
    // Within a key, oldest first.
    expect(got.dispatch.filter((id) => keyOf.get(id) === 'flood')).toEqual([flood[0]!.id, flood[1]!.id]);
  });

  it('a key with stages already in flight waits for the keys with fewer', () => {
    const flood = [stage({ key: 'flood', keyLimit: 100, status: 'Throttled' })];
    const small = stage({ key: 'small', keyLimit: 100 });
    const got = admitStages([...flood, small], { ...none, appFree: 1, keyLoad: new Map([['flood', 16]]) });
    expect(got.dispatch).toEqual([small.id]);
  });

  it('a lower priority number goes first, before fair turns and age', () => {
    const old = stage({ status: 'Throttled', priority: 3 });
    const urgent = stage({ priority: 1, key: 'k', keyLimit: 10 });
    const got = admitStages([old, urgent], { ...none, appFree: 1, keyLoad: new Map([['k', 9]]) });
    expect(got.dispatch).toEqual([urgent.id]);
    // Already Throttled: it waits on, no change to write.
    expect(got.throttle).toEqual([]);
  });

  it('within a key, priority before age', () => {
    const older = stage({ key: 'k', keyLimit: 1, priority: 4 });
    const younger = stage({ key: 'k', keyLimit: 1, priority: 2 });
    expect(admitStages([older, younger], none).dispatch).toEqual([younger.id]);
  });

  it('the application cap counts every dispatch; unchanged order without keys and priorities (§7)', () => {
    const t = stage({ status: 'Throttled' });
    const n1 = stage();
    const n2 = stage();
    const got = admitStages([n2, n1, t], { ...none, appFree: 2 });
    expect(got.dispatch).toEqual([t.id, n1.id]);
    expect(got.throttle).toEqual([n2.id]);
  });

  it('a paused handler dispatches nothing; other handlers go on', () => {
    const p = stage({ handler: 'payments' });
    const o = stage({ handler: 'other' });
    const got = admitStages([p, o], { ...none, handlers: new Map([['payments', { paused: true, free: null, tokens: null }]]) });
    expect(got.dispatch).toEqual([o.id]);
    expect(got.throttle).toEqual([p.id]);
    expect(got.rateBlocked.size).toBe(0);
  });

  it('maxConcurrent and the rate bucket hold, and the tokens taken are reported', () => {
    const c = Array.from({ length: 5 }, () => stage({ handler: 'h' }));
    expect(admitStages(c, { ...none, handlers: new Map([['h', { paused: false, free: 2, tokens: null }]]) }).dispatch).toHaveLength(2);
    const rated = admitStages(c, { ...none, handlers: new Map([['h', { paused: false, free: null, tokens: 3.5 }]]) });
    expect(rated.dispatch).toHaveLength(3);
    expect(rated.tokensTaken.get('h')).toBe(3);
    expect([...rated.rateBlocked]).toEqual(['h']);
  });

  it('a retry that must wait becomes Throttled; a Throttled stage that waits is not listed again as a change', () => {
    const retry = stage({ status: 'RetryScheduled', key: 'k', keyLimit: 1 });
    const got = admitStages([retry], { ...none, keyLoad: new Map([['k', 1]]) });
    expect(got.throttle).toEqual([retry.id]);
  });
});

describe('dispatchBucket / nextTokenAt', () => {
  it('holds one second of burst, at least one, and refills at the rate', () => {
    expect(dispatchBucket(5, { tokens: 0, at: 0 }, 10_000).tokens).toBe(5);
    expect(dispatchBucket(0.5, { tokens: 0, at: 0 }, 10_000).tokens).toBe(1);
    expect(dispatchBucket(5, { tokens: 0, at: 0 }, 400).tokens).toBeCloseTo(2);
    expect(nextTokenAt(5, { tokens: 0.5, at: 1000 })).toBe(1100);
  });
});

describe('admitStages under APP_MAX_ACTIVE_STAGES alone (addendum §7)', () => {
  const candidates: AdmissionCandidate[] = [
    { id: 30, status: 'NotStarted', handler: 'h', key: null, keyLimit: null, priority: 3 },
    { id: 10, status: 'Throttled', handler: 'h', key: null, keyLimit: null, priority: 3 },
    { id: 20, status: 'RetryScheduled', handler: 'h', key: null, keyLimit: null, priority: 3 },
    { id: 40, status: 'Throttled', handler: 'h', key: null, keyLimit: null, priority: 3 },
  ];
  const cap = (appFree: number | null) => {
    const { dispatch, throttle } = admitStages(candidates, { ...none, appFree });
    return { dispatch, throttle };
  };

  it('without a cap every candidate is dispatched', () => {
    expect(cap(null)).toEqual({ dispatch: [10, 40, 20, 30], throttle: [] });
  });

  it('gives the free slots to the stages already Throttled first, oldest first, then to newly ready ones; throttles the rest', () => {
    expect(cap(1)).toEqual({ dispatch: [10], throttle: [20, 30] });
    expect(cap(2)).toEqual({ dispatch: [10, 40], throttle: [20, 30] });
    expect(cap(3)).toEqual({ dispatch: [10, 40, 20], throttle: [30] });
  });

  it('no free slot (or a negative count) dispatches nothing', () => {
    expect(cap(0)).toEqual({ dispatch: [], throttle: [20, 30] });
    expect(cap(-3).dispatch).toEqual([]);
  });
});
