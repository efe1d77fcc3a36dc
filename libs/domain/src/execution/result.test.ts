import { describe, expect, it } from 'vitest';
import type { ContextEntry } from './result.js';
import { MAX_CONTEXT_ITEMS, mergeContext, resultTransition } from './result.js';

const item = (key: string, value = `v-${key}`): ContextEntry => ({ key, value, valueType: null, isSensitive: false });
const keys = (items: ContextEntry[]) => items.map((i) => i.key);

describe('result transition (addendum §7, §13)', () => {
  it('isWaitingForApproval=true parks the stage whatever isSuccess says', () => {
    expect(resultTransition({ isSuccess: true, isWaitingForApproval: true })).toBe('park');
    expect(resultTransition({ isSuccess: false, isWaitingForApproval: true })).toBe('park');
  });
  it('isSuccess=true completes', () => {
    expect(resultTransition({ isSuccess: true })).toBe('complete');
    expect(resultTransition({ isSuccess: true, isWaitingForApproval: false })).toBe('complete');
  });
  it('a failure is isSuccess=false without isWaitingForApproval', () => {
    expect(resultTransition({ isSuccess: false })).toBe('fail');
    expect(resultTransition({ isSuccess: false, isWaitingForApproval: false })).toBe('fail');
  });
});

describe('context updates (addendum §13)', () => {
  it('an upsert of an existing key replaces it in place and keeps its position', () => {
    const out = mergeContext([item('a'), item('b'), item('c')], [{ key: 'b', value: 'new', valueType: 'json', isSensitive: true }]);
    expect(out.items).toEqual([item('a'), { key: 'b', value: 'new', valueType: 'json', isSensitive: true }, item('c')]);
    expect(out.dropped).toEqual([]);
  });

  it('an upsert is a whole item: omitted value and valueType take their defaults; sensitivity stays (decision 0009)', () => {
    const secret: ContextEntry = { key: 's', value: 'old', valueType: 'json', isSensitive: true };
    expect(mergeContext([secret], [{ key: 's', value: 'new' }]).items).toEqual([{ key: 's', value: 'new', valueType: null, isSensitive: true }]);
    const plain: ContextEntry = { key: 'p', value: 'old', valueType: 'json', isSensitive: false };
    expect(mergeContext([plain], [{ key: 'p' }]).items).toEqual([{ key: 'p', value: '', valueType: null, isSensitive: false }]);
  });

  it('a new key is appended; omitted fields take their defaults (value "", valueType null, isSensitive false)', () => {
    const out = mergeContext([item('a')], [{ key: 'z' }]);
    expect(out.items).toEqual([item('a'), { key: 'z', value: '', valueType: null, isSensitive: false }]);
  });

  it('a tombstone (isDeleted=true) removes the key and ignores its value; an unknown key is a no-op', () => {
    const out = mergeContext([item('a'), item('b')], [{ key: 'a', value: 'x', isDeleted: true }, { key: 'nope', isDeleted: true }]);
    expect(out).toEqual({ items: [item('b')], dropped: [] });
  });

  it('updates apply in order: delete then re-add moves the key to the end', () => {
    const out = mergeContext([item('a'), item('b')], [{ key: 'a', isDeleted: true }, { key: 'a', value: 'v-a' }]);
    expect(keys(out.items)).toEqual(['b', 'a']);
  });

  it('does not mutate the current items', () => {
    const current = [item('a')];
    mergeContext(current, [{ key: 'a', value: 'changed' }]);
    expect(current).toEqual([item('a')]);
  });

  it('new keys beyond 64 in total are dropped and reported; updates to existing keys still apply', () => {
    expect(MAX_CONTEXT_ITEMS).toBe(64);
    const current = Array.from({ length: 63 }, (_, i) => item(`k${i}`));
    const out = mergeContext(current, [{ key: 'new1' }, { key: 'new2' }, { key: 'k0', value: 'updated' }, { key: 'new3' }, { key: 'new2' }]);
    expect(out.items).toHaveLength(64);
    expect(out.items[0]).toEqual({ key: 'k0', value: 'updated', valueType: null, isSensitive: false });
    expect(out.items[63]?.key).toBe('new1');
    expect(out.dropped).toEqual(['new2', 'new3']);
  });

  it('a deletion in the same batch makes room for a later new key', () => {
    const current = Array.from({ length: 64 }, (_, i) => item(`k${i}`));
    const out = mergeContext(current, [{ key: 'early' }, { key: 'k5', isDeleted: true }, { key: 'late' }, { key: 'early' }]);
    expect(out.items).toHaveLength(64);
    expect(keys(out.items)).not.toContain('k5');
    expect(keys(out.items).at(-1)).toBe('late');
    expect(out.dropped).toEqual(['early']);
  });

  it('a key dropped early but added after a deletion made room is not reported', () => {
    const current = Array.from({ length: 2 }, (_, i) => item(`k${i}`));
    const out = mergeContext(current, [{ key: 'x' }, { key: 'k0', isDeleted: true }, { key: 'x' }], 2);
    expect(keys(out.items)).toEqual(['k1', 'x']);
    expect(out.dropped).toEqual([]);
  });
});

describe('sensitivity is sticky (decision 0009)', () => {
  it('an update of a sensitive key that omits isSensitive keeps it sensitive; an explicit false clears it', () => {
    const current = [{ key: 'token', value: 'old', valueType: null, isSensitive: true }];
    expect(mergeContext(current, [{ key: 'token', value: 'new' }]).items[0]).toMatchObject({ value: 'new', isSensitive: true });
    expect(mergeContext(current, [{ key: 'token', value: 'new', isSensitive: false }]).items[0]).toMatchObject({ isSensitive: false });
  });
});
