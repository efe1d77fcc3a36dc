import { describe, expect, it } from 'vitest';
import { ConfigError } from '@po/config';
import { BROKER_HANDOUT_ACK, parseConfig } from './config.js';

/** The problems parseConfig reports, or [] when it accepts the environment. */
function problemsOf(env: Record<string, string>): string[] {
  try {
    parseConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe('WORKER_BROKER_HANDOUT needs WORKER_BROKER_HANDOUT_ACK (decision 0082)', () => {
  const handout = {
    WORKER_BROKER_HANDOUT: 'true',
    WORKER_BROKER_CONNECTION_STRING: 'redis://shared:6379',
  };

  it('refuses to start with the hand-out on and no acknowledgement, naming the variable and why', () => {
    const problems = problemsOf(handout);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('WORKER_BROKER_HANDOUT_ACK=tenants-share-redis');
    expect(problems[0]).toMatch(/shared Redis credential/);
    expect(problems[0]).toMatch(/every other tenant/);
  });

  it('refuses any value but the exact acknowledgement', () => {
    for (const ack of [
      'yes',
      'true',
      'TENANTS-SHARE-REDIS',
      'tenants-share-redis!',
      'tenants share redis',
    ]) {
      expect(problemsOf({ ...handout, WORKER_BROKER_HANDOUT_ACK: ack }), ack).toEqual([
        expect.stringContaining('WORKER_BROKER_HANDOUT_ACK'),
      ]);
    }
  });

  it('starts with the exact acknowledgement and hands out the broker', () => {
    expect(BROKER_HANDOUT_ACK).toBe('tenants-share-redis');
    const config = parseConfig({ ...handout, WORKER_BROKER_HANDOUT_ACK: 'tenants-share-redis' });
    expect(config).toMatchObject({
      brokerHandout: true,
      brokerConnectionString: 'redis://shared:6379',
    });
  });

  it('needs no acknowledgement while the hand-out is off (the default)', () => {
    expect(parseConfig({}).brokerHandout).toBe(false);
    expect(parseConfig({ WORKER_BROKER_HANDOUT: 'false' }).brokerHandout).toBe(false);
  });

  it('lists the missing acknowledgement together with the other problems', () => {
    const problems = problemsOf({ ...handout, WORKER_SESSION_TTL: 'soon' });
    expect(problems).toEqual([
      expect.stringContaining('WORKER_SESSION_TTL'),
      expect.stringContaining('WORKER_BROKER_HANDOUT_ACK'),
    ]);
  });
});
