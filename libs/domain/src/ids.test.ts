import { describe, expect, it } from 'vitest';
import { newSpanId, newTraceId } from './ids.js';

describe('ids', () => {
  it('trace ids are 32 and span ids 16 lowercase hex characters, never repeated', () => {
    const traces = Array.from({ length: 1000 }, newTraceId);
    const spans = Array.from({ length: 1000 }, newSpanId);
    expect(traces.every((t) => /^[0-9a-f]{32}$/.test(t))).toBe(true);
    expect(spans.every((s) => /^[0-9a-f]{16}$/.test(s))).toBe(true);
    // 1000 of each cross the 4 KiB pool several times: no byte is handed out twice.
    expect(new Set(traces).size).toBe(1000);
    expect(new Set(spans).size).toBe(1000);
  });
});
