import { describe, expect, it } from 'vitest';
import { parseConfig } from './config.js';

describe('result-consumer config', () => {
  it('reads RESULTS_MAX_ATTEMPTS, 1..100, default 8 (issue 28: a result that cannot be applied is retried a bounded number of times)', () => {
    expect(parseConfig({}).resultsMaxAttempts).toBe(8);
    expect(parseConfig({ RESULTS_MAX_ATTEMPTS: '1' }).resultsMaxAttempts).toBe(1);
    expect(parseConfig({ RESULTS_MAX_ATTEMPTS: '20' }).resultsMaxAttempts).toBe(20);
    for (const bad of ['0', '101', '-3', '2.5', 'forever']) expect(() => parseConfig({ RESULTS_MAX_ATTEMPTS: bad }), bad).toThrow(/RESULTS_MAX_ATTEMPTS/);
  });
});
