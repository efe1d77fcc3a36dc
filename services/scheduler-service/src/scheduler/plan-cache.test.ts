import { describe, expect, it } from 'vitest';
import { PlanCache, planDefinition, planKey, type PlannedDefinition } from './plan-cache.js';

const plan = (chars: number): PlannedDefinition => ({ ok: true, template: 'x'.repeat(chars), stageCount: 1, traceId: null });
const at = new Date('2030-01-01T00:00:00.000Z');

describe('planned definitions', () => {
  it('plans a definition as creation does: template, stage count, a fixed trace id only when the definition has one', () => {
    const schedule = { id: 7, applicationId: 3 };
    const planned = planDefinition(schedule, { name: 'p', stages: [{ stageName: 'a', stageHandlerName: 'h' }, { stageName: 'b', stageHandlerName: 'h' }] });
    expect(planned).toMatchObject({ ok: true, stageCount: 2, traceId: null });
    expect(JSON.parse((planned as { template: string }).template)).toMatchObject({ name: 'p', policies: null, context: [], keywords: [] });
    expect(planDefinition(schedule, { name: 'p', traceId: 'ab'.repeat(16), stages: [{ stageName: 'a', stageHandlerName: 'h' }] })).toMatchObject({ traceId: 'ab'.repeat(16) });
    const failed = planDefinition(schedule, { name: 'p', stages: [{ stageName: 'a', stageHandlerName: 'h', options: { dependsOn: ['nope'] } }] });
    expect(failed).toMatchObject({ ok: false });
    expect((failed as { reason: string }).reason).toMatch(/^creation_failed: \/stages\/0\/options\/dependsOn\/0 /);
  });

  it('a new version, a new updatedAt or a new stored size is a new key', () => {
    const base = planKey({ definitionVersion: 1, updatedAt: at }, 100);
    expect(planKey({ definitionVersion: 1, updatedAt: at }, 100)).toBe(base);
    expect(planKey({ definitionVersion: 2, updatedAt: at }, 100)).not.toBe(base);
    expect(planKey({ definitionVersion: 1, updatedAt: new Date(at.getTime() + 1) }, 100)).not.toBe(base);
    expect(planKey({ definitionVersion: 1, updatedAt: at }, 101)).not.toBe(base);
  });
});

describe('PlanCache', () => {
  it('returns a plan only for its key; a new key replaces the schedule’s old entry', () => {
    const cache = new PlanCache(10_000);
    const first = plan(10);
    cache.set(1, 'k1', first);
    expect(cache.get(1, 'k1')).toBe(first);
    expect(cache.get(1, 'k2')).toBeUndefined();
    expect(cache.get(2, 'k1')).toBeUndefined();
    cache.set(1, 'k2', plan(20));
    expect(cache.get(1, 'k1')).toBeUndefined();
    expect(cache.bytes).toBe(64 + 20);
  });

  it('stays within its bytes, evicting the least recently used first', () => {
    const cache = new PlanCache(4 * (64 + 1000));
    for (const id of [1, 2, 3, 4]) cache.set(id, 'k', plan(1000));
    expect(cache.get(1, 'k')).toBeDefined(); // 1 is now the most recently used
    cache.set(5, 'k', plan(1000));
    expect(cache.bytes).toBeLessThanOrEqual(cache.maxBytes);
    expect([1, 2, 3, 4, 5].map((id) => cache.get(id, 'k') !== undefined)).toEqual([true, false, true, true, true]);
  });

  it('does not keep an entry larger than a quarter of its bound', () => {
    const cache = new PlanCache(4000);
    cache.set(1, 'k', plan(100));
    cache.set(2, 'k', plan(2000));
    expect(cache.get(2, 'k')).toBeUndefined();
    expect(cache.get(1, 'k')).toBeDefined();
    expect(cache.bytes).toBe(164);
  });
});
