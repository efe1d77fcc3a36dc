import { describe, expect, it } from 'vitest';
import { contextValueText, MASK, prettyOutput, previewText } from './output';

describe('previewText', () => {
  it('leaves short text alone', () => {
    expect(previewText('hello', 10)).toEqual({ text: 'hello', truncated: false, hidden: 0 });
  });

  it('cuts long text and says how much is hidden', () => {
    const out = previewText('x'.repeat(1000), 100);
    expect(out.text).toHaveLength(100);
    expect(out.truncated).toBe(true);
    expect(out.hidden).toBe(900);
  });

  it('ends the preview on a whole line when one ends near the cut', () => {
    const text = `${'a'.repeat(90)}\n${'b'.repeat(50)}`;
    const out = previewText(text, 100);
    expect(out.text).toBe('a'.repeat(90));
    expect(out.hidden).toBe(51);
  });

  it('never splits a character made of two UTF-16 units', () => {
    const out = previewText('😀'.repeat(10), 3);
    expect(out.text).toBe('😀😀😀');
    expect(out.hidden).toBe(7);
  });
});

describe('prettyOutput', () => {
  it('indents JSON and leaves other text as it is', () => {
    expect(prettyOutput('{"a":1,"b":[2]}')).toBe('{\n  "a": 1,\n  "b": [\n    2\n  ]\n}');
    expect(prettyOutput('done')).toBe('done');
    expect(prettyOutput('{not json')).toBe('{not json');
  });
});

describe('contextValueText', () => {
  it('masks a sensitive value whatever the server sent for it', () => {
    expect(contextValueText({ value: '[REDACTED]', isSensitive: true })).toBe(MASK);
    expect(contextValueText({ value: 's3cr3t', isSensitive: true })).toBe(MASK);
  });

  it('shows a plain value as it is', () => {
    expect(contextValueText({ value: 'eu-west-1', isSensitive: false })).toBe('eu-west-1');
  });
});
