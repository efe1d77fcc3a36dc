import { describe, expect, it } from 'vitest';
import { UsageError } from './errors.js';
import {
  collect,
  collectRaw,
  durationValue,
  parseDuration,
  parseMoment,
  positiveInt,
  readObjectFile,
  stringifyStageInputs,
} from './input.js';

const NOW = new Date('2025-03-02T12:00:00.000Z');

describe('arguments', () => {
  it('ids are positive integers', () => {
    expect(positiveInt('42')).toBe(42);
    for (const bad of ['0', '-1', '01', '1.5', 'abc', '9007199254740993'])
      expect(() => positiveInt(bad)).toThrow(/positive integer/);
  });

  it('repeated options collect; --status also splits on commas, --keyword never does', () => {
    expect(collect('Completed', collect('Failed,Cancelled'))).toEqual([
      'Failed',
      'Cancelled',
      'Completed',
    ]);
    expect(collectRaw('tags=a,b', collectRaw('env'))).toEqual(['env', 'tags=a,b']);
  });
});

describe('durations and moments', () => {
  it('reads 500ms, 30s, 15m, 24h, 7d, 2w and combinations', () => {
    expect(['500ms', '30s', '15m', '24h', '7d', '2w', '1h30m'].map(parseDuration)).toEqual([
      500, 30_000, 900_000, 86_400_000, 604_800_000, 1_209_600_000, 5_400_000,
    ]);
    for (const bad of ['', '24', 'h', '1.5h', '-1h', '1 h', '1y'])
      expect(parseDuration(bad)).toBeUndefined();
    expect(() => durationValue('0s')).toThrow(/duration/);
  });

  it('--since 24h is 24 hours before now; a date-time needs an offset', () => {
    expect(parseMoment('24h', NOW)).toBe('2025-03-01T12:00:00.000Z');
    expect(parseMoment('2025-03-01T13:00:00+01:00', NOW)).toBe('2025-03-01T12:00:00.000Z');
    expect(() => parseMoment('2025-03-01T12:00:00', NOW)).toThrow(UsageError);
    expect(() => parseMoment('yesterday', NOW)).toThrow(/neither a duration/);
  });
});

describe('definition files', () => {
  const files: Record<string, string> = {
    'p.yaml':
      'name: release\nstages:\n  - stageName: build\n    stageHandlerName: echo\n    input: { ref: main }\n',
    'p.json': '{"name":"release","stages":[]}',
    'list.yaml': '- a\n- b\n',
    'broken.json': '{"name":',
    'broken.yaml': 'name: [unclosed\n',
  };
  const read = (path: string) => {
    const text = files[path];
    if (text === undefined) throw new Error('ENOENT: no such file');
    return text;
  };

  it('reads YAML, and JSON by its extension', async () => {
    expect(await readObjectFile('p.yaml', read)).toEqual({
      name: 'release',
      stages: [{ stageName: 'build', stageHandlerName: 'echo', input: { ref: 'main' } }],
    });
    expect(await readObjectFile('p.json', read)).toEqual({ name: 'release', stages: [] });
  });

  it('says what is wrong with a file that is missing, broken or not an object', async () => {
    await expect(readObjectFile('nope.yaml', read)).rejects.toThrow(
      /cannot read nope.yaml: ENOENT/,
    );
    await expect(readObjectFile('broken.json', read)).rejects.toThrow(
      /broken.json is not valid JSON/,
    );
    await expect(readObjectFile('broken.yaml', read)).rejects.toThrow(
      /broken.yaml is not valid YAML or JSON/,
    );
    await expect(readObjectFile('list.yaml', read)).rejects.toThrow(
      /must hold one object \(a mapping\), not a list/,
    );
  });

  it('sends a stage input that is not a string as compact JSON, and leaves the rest alone', () => {
    const out = stringifyStageInputs({
      name: 'n',
      stages: [
        { stageName: 'a', input: { ref: 'main', n: [1, 2] } },
        { stageName: 'b', input: 'as is' },
        { stageName: 'c', input: 42 },
        { stageName: 'd' },
        'junk',
      ],
    });
    expect(out.stages).toEqual([
      { stageName: 'a', input: '{"ref":"main","n":[1,2]}' },
      { stageName: 'b', input: 'as is' },
      { stageName: 'c', input: '42' },
      { stageName: 'd' },
      'junk',
    ]);
  });
});
