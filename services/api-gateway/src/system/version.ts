export interface BuildInfo {
  version: string;
  commit: string | null;
  builtAt: string | null;
}

/** GET /version: build metadata and licence tier. */
export function versionInfo(build: BuildInfo) {
  return { version: build.version, licenseTier: 'community', commit: build.commit, builtAt: build.builtAt };
}
