import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * libs/dashboard/dist, found through the @po/dashboard package (a dependency of this service, so
 * a workspace checkout and the container image both resolve it); null when it is not installed.
 */
export function dashboardDistDir(): string | null {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@po/dashboard/package.json')), 'dist');
  } catch {
    return null;
  }
}
