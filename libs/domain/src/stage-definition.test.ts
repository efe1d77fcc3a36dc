import { describe, expect, it } from 'vitest';
import { checkAddedStages, inputString, stageFromCreate, stageFromInfo, type NewStage } from './stage-definition.js';

const base = { stageName: 's', stageHandlerName: 'h' };

describe('effective continuation (addendum §6)', () => {
  it('StageCreate: options.runNextIfFailed wins over the compatibility field', () => {
    expect(stageFromCreate({ ...base, runNextIfFailed: true, options: { runNextIfFailed: false } }).options.runNextIfFailed).toBe(false);
    expect(stageFromCreate({ ...base, runNextIfFailed: true }).options.runNextIfFailed).toBe(true);
    expect(stageFromCreate(base).options.runNextIfFailed).toBe(false);
  });

  it('StageInfo: options over runNextIfCurrentFailed over runNextIfFailed', () => {
    expect(stageFromInfo({ ...base, runNextIfFailed: false, runNextIfCurrentFailed: true }).options.runNextIfFailed).toBe(true);
    expect(
      stageFromInfo({ ...base, runNextIfCurrentFailed: true, options: { runNextIfFailed: false } }).options.runNextIfFailed,
    ).toBe(false);
    expect(stageFromInfo({ ...base, runNextIfFailed: true }).options.runNextIfFailed).toBe(true);
  });
});

describe('stage options in responses carry all 16 fields with defaults (addendum §4, decision 0132)', () => {
  it('fills every default', () => {
    expect(stageFromCreate(base).options).toEqual({
      runNextIfFailed: false,
      retryInterval: 0,
      maxRetries: 0,
      timeOut: null,
      retryOnErrorCodes: [],
      backoff: 'fixed',
      maxRetryInterval: null,
      jitter: false,
      dependsOn: [],
      runInParallelWith: [],
      failIfOutputEmpty: false,
      notifyOnFailure: false,
      runAsUser: null,
      concurrencyKey: null,
      concurrencyLimit: null,
      priority: 3,
    });
  });

  it('StageCreate input omitted becomes ""; description omitted becomes null', () => {
    const s = stageFromCreate(base);
    expect(s.input).toBe('');
    expect(s.description).toBeNull();
  });
});

describe('StageInfo input unwrapping', () => {
  it('keeps a string, serialises other JSON compactly, null and omitted become ""', () => {
    expect(inputString('{"a": 1}')).toBe('{"a": 1}');
    expect(inputString({ a: 1, b: [1, 2] })).toBe('{"a":1,"b":[1,2]}');
    expect(inputString(42)).toBe('42');
    expect(inputString(true)).toBe('true');
    expect(inputString([1, 2])).toBe('[1,2]');
    expect(inputString(null)).toBe('');
    expect(inputString(undefined)).toBe('');
  });
});

describe('checkAddedStages', () => {
  const stage = (name: string, dependsOn: string[] = [], input = ''): NewStage => ({
    ...stageFromCreate({ stageName: name, stageHandlerName: 'h', input }),
    options: { ...stageFromCreate(base).options, dependsOn },
  });

  it('accepts dependsOn names of earlier stages, existing or in the same request', () => {
    expect(checkAddedStages(['a'], [stage('b', ['a']), stage('c', ['a', 'b'])])).toEqual([]);
  });

  it('rejects a dependsOn name that is not earlier in position, pointing at the item', () => {
    expect(checkAddedStages([], [stage('a', ['b']), stage('b')])).toEqual([
      { field: '/stages/0/options/dependsOn/0', message: expect.stringContaining('"b"') },
    ]);
    expect(checkAddedStages([], [stage('a', ['a'])])[0]?.field).toBe('/stages/0/options/dependsOn/0');
  });

  it('caps a pipeline at 100 stages: 100 pass, 101 fail at /stages', () => {
    const existing = Array.from({ length: 99 }, (_, i) => `s${i}`);
    expect(checkAddedStages(existing, [stage('x')])).toEqual([]);
    expect(checkAddedStages(existing, [stage('x'), stage('y')])).toEqual([
      { field: '/stages', message: expect.stringContaining('100') },
    ]);
  });

  it('limits the unwrapped input to 262144 bytes', () => {
    expect(checkAddedStages([], [stage('a', [], 'x'.repeat(262_144))])).toEqual([]);
    expect(checkAddedStages([], [stage('a', [], 'é'.repeat(131_073))])).toEqual([
      { field: '/stages/0/input', message: 'must be at most 262144 bytes' },
    ]);
  });
});

describe('flow-control options (decision 0132)', () => {
  it('a key without a limit gets limit 1; a stage without a priority takes its pipeline\'s', () => {
    const s = stageFromCreate({ ...base, options: { concurrencyKey: 'customer-7' } }, 1);
    expect(s.options).toMatchObject({ concurrencyKey: 'customer-7', concurrencyLimit: 1, priority: 1 });
  });

  it('the stage\'s own priority wins over its pipeline\'s; the default is 3', () => {
    expect(stageFromCreate({ ...base, options: { priority: 5 } }, 1).options.priority).toBe(5);
    expect(stageFromCreate(base).options.priority).toBe(3);
    expect(stageFromInfo({ stageName: 'a', stageHandlerName: 'h' }, 2).options.priority).toBe(2);
  });

  it('a concurrencyLimit without a concurrencyKey is refused with its field named', () => {
    const stage = stageFromCreate({ ...base, options: { concurrencyLimit: 4 } });
    expect(checkAddedStages([], [stage])).toEqual([
      { field: '/stages/0/options/concurrencyLimit', message: 'needs a concurrencyKey (a limit applies to the stages of one key)' },
    ]);
  });
});
