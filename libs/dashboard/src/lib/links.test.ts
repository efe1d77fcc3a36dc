import { describe, expect, it } from 'vitest';
import { defaultStageId, traceUrl } from './links';

describe('traceUrl', () => {
  it('puts the trace id into the template', () => {
    expect(traceUrl('https://jaeger.example/trace/{traceId}', 'abc123')).toBe(
      'https://jaeger.example/trace/abc123',
    );
    expect(traceUrl('http://t.local/?q={traceId}&x={traceId}', 'a b')).toBe(
      'http://t.local/?q=a%20b&x=a%20b',
    );
  });

  it('links nowhere without a template, or when the template is not an http(s) URL', () => {
    expect(traceUrl(null, 'abc')).toBeNull();
    expect(traceUrl('https://x/{traceId}', '')).toBeNull();
    expect(traceUrl('javascript:alert({traceId})', 'abc')).toBeNull();
    expect(traceUrl('not a url {traceId}', 'abc')).toBeNull();
  });
});

describe('defaultStageId', () => {
  const s = (id: number, status: string, isTerminal = false) => ({ id, status, isTerminal });
  it('opens the stage that waits for approval or failed before one that runs', () => {
    expect(
      defaultStageId([s(1, 'Completed', true), s(2, 'Running'), s(3, 'WaitingForApproval')]),
    ).toBe(3);
    expect(defaultStageId([s(1, 'Failed', true), s(2, 'Running')])).toBe(1);
  });
  it('otherwise opens the first unfinished stage, else the last one', () => {
    expect(defaultStageId([s(1, 'Completed', true), s(2, 'NotStarted'), s(3, 'NotStarted')])).toBe(
      2,
    );
    expect(defaultStageId([s(1, 'Completed', true), s(2, 'Completed', true)])).toBe(2);
    expect(defaultStageId([])).toBeNull();
  });
});
