import { describe, expect, it } from 'vitest';
import { details, stageCounts, table, time } from './render.js';

describe('human output', () => {
  it('aligns table columns, shows missing values as -, keeps one line per row', () => {
    expect(
      table(
        ['ID', 'NAME', 'NOTE'],
        [
          [1, 'build', null],
          [12, 'a\nb', 'é'],
        ],
      ),
    ).toBe(['ID  NAME   NOTE', '1   build  -', '12  a ⏎ b  é'].join('\n'));
  });

  it('aligns details and leaves out undefined entries', () => {
    expect(
      details([
        ['status', 'Completed'],
        ['rerun of', undefined],
        ['trace id', 'abc'],
      ]),
    ).toBe('status    Completed\ntrace id  abc');
  });

  it('writes times without milliseconds and counts without zeros', () => {
    expect(time('2025-03-01T12:00:00.000Z')).toBe('2025-03-01T12:00:00Z');
    expect(time(null)).toBeNull();
    expect(stageCounts({ Completed: 2, Failed: 0, Running: 1 })).toBe('Completed:2 Running:1');
  });
});
