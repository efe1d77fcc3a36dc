import type { VersionInfo } from '@po/contracts';

export interface BuildInfo {
  version: string;
  /** GIT_COMMIT, stamped into the image at build time; null when unset. */
  commit: string | null;
  /** BUILT_AT, stamped into the image at build time; null when unset. */
  builtAt: string | null;
}

/** RFC 3339 with seconds and an offset or Z, as `date -u +%Y-%m-%dT%H:%M:%SZ` prints it. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;

/**
 * BUILT_AT in the form VersionInfo's `builtAt` takes (UTC with milliseconds); null when unset or
 * not a date-time, so a malformed build argument never makes GET /version break its own schema.
 */
export function builtAtUtc(value: string | null): string | null {
  if (!value || !RFC3339.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/** GET /version: build metadata and licence tier (addendum §5.7). */
export function versionInfo(build: BuildInfo): VersionInfo {
  return {
    version: build.version,
    licenseTier: 'community',
    commit: build.commit,
    builtAt: builtAtUtc(build.builtAt),
  };
}
