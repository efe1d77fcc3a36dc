import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { CHART_VALUES, chartStickyRule, ensureNginx, startNginxFront, type NginxFront } from '../../deploy/local/nginx.mjs';

export { startNginxFront, type NginxFront };

/**
 * nginx for the multi-replica test: found, or installed from Debian's packages when we are root
 * (CI is), else `nginx` is null and `reason` says why the test is skipped.
 */
export const nginxAvailability = ensureNginx({ log: (line) => console.log(`[multi-replica] ${line}`) });

export interface WorkerRouting {
  sticky: string;
  hashBy: string;
  /** The nginx variable to hash on, or null (round robin) when the chart's mode is not header-hash. */
  hashOn: string | null;
}

/**
 * The chart's worker routing (helm/pipeline-orchestration/values.yaml `workerRouting`), so the
 * local nginx uses the very rule the chart renders into its Ingress. Read with a YAML parser and
 * cross-checked against the dependency-free reader that deploy/local/nginx.mjs offers stack.mjs.
 */
export function chartWorkerRouting(): WorkerRouting {
  const values = parse(readFileSync(CHART_VALUES, 'utf8')) as { workerRouting: { sticky: string; hashBy: string } };
  const { sticky, hashBy } = values.workerRouting;
  const light = chartStickyRule();
  if (light.sticky !== sticky || light.hashBy !== hashBy) {
    throw new Error(`deploy/local/nginx.mjs reads workerRouting as ${JSON.stringify(light)}, the YAML parser as ${JSON.stringify({ sticky, hashBy })}`);
  }
  return { sticky, hashBy, hashOn: sticky === 'header-hash' ? hashBy : null };
}
