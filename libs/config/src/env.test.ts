import { describe, expect, it } from 'vitest';
import { ConfigError, envReader } from './env.js';
import { commonConfig } from './common.js';

describe('envReader', () => {
  it('uses defaults when variables are unset or blank', () => {
    const env = envReader({ PORT: '  ' });
    expect(commonConfig(env, 8080).port).toBe(8080);
    env.done();
  });

  it('reports every invalid variable at once, without echoing URL contents', () => {
    const env = envReader({ PORT: 'eighty', DATABASE_URL: 'not a url secret', WORKER_FLAG: 'maybe' });
    commonConfig(env, 8080);
    env.bool('WORKER_FLAG', false);
    try {
      env.done();
      expect.unreachable('done() must throw');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const problems = (err as ConfigError).problems;
      expect(problems).toHaveLength(3);
      expect(problems.join('\n')).not.toContain('secret');
    }
  });

  it('enforces integer ranges', () => {
    const env = envReader({ GATEWAY_MAX_INFLIGHT: '0' });
    expect(env.int('GATEWAY_MAX_INFLIGHT', 128, { min: 1 })).toBe(0);
    expect(() => env.done()).toThrow(/GATEWAY_MAX_INFLIGHT must be >= 1/);
  });
});
