// GET /version's body from the build metadata the image stamps (GIT_COMMIT, BUILT_AT; addendum §5.7).
import { describe, expect, it } from 'vitest';
import { compile, versionInfoSchema } from '@po/contracts';
import { builtAtUtc, versionInfo } from './version.js';

const valid = compile(versionInfoSchema, { normalise: false });

describe('GET /version body', () => {
  it('shows the commit and build time the image was stamped with', () => {
    const body = versionInfo({
      version: '0.5.0',
      commit: '4882c94e1f0c3d2b5a6978e1d2c3b4a5f6e7d8c9',
      builtAt: '2026-11-24T10:15:30Z',
    });
    expect(body).toEqual({
      version: '0.5.0',
      licenseTier: 'community',
      commit: '4882c94e1f0c3d2b5a6978e1d2c3b4a5f6e7d8c9',
      builtAt: '2026-11-24T10:15:30.000Z',
    });
    expect(valid(body).ok).toBe(true);
  });

  it('answers null for both when the image was built without them', () => {
    const body = versionInfo({ version: '0.5.0', commit: null, builtAt: null });
    expect(body).toEqual({
      version: '0.5.0',
      licenseTier: 'community',
      commit: null,
      builtAt: null,
    });
    expect(valid(body).ok).toBe(true);
  });

  it('a build time with an offset is shown in UTC; one that is not a date-time is null', () => {
    expect(builtAtUtc('2026-11-24T11:15:30+01:00')).toBe('2026-11-24T10:15:30.000Z');
    expect(builtAtUtc('2026-11-24T10:15:30.123456Z')).toBe('2026-11-24T10:15:30.123Z');
    for (const bad of ['yesterday', '1764000000', '2026-11-24', '2026-13-40T99:00:00Z', '']) {
      expect(builtAtUtc(bad)).toBeNull();
      expect(valid(versionInfo({ version: '0.5.0', commit: null, builtAt: bad })).ok).toBe(true);
    }
  });
});
