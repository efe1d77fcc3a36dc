// The worker fleet's side of the chart (check-chart.mjs; decision 0129): in-cluster workers reach
// the worker-gateway Service, whose ClientIP affinity must outlast a delivery's visibility timeout,
// and the optional KEDA ScaledObjects, whose query must name the backlog gauge the services serve
// (libs/telemetry/src/gauges.ts) for the entry's own queue. Bad values are refused.
import { readFileSync } from 'node:fs';
import { analyse } from './promql.mjs';
import { SERVICES } from './value-sets.mjs';

const GAUGES = readFileSync(new URL('../../libs/telemetry/src/gauges.ts', import.meta.url), 'utf8');
const BACKLOG_GAUGE = 'po_stagenext_queue_messages';
/** Kubernetes' bounds and default of sessionAffinityConfig.clientIP.timeoutSeconds. */
const K8S_DEFAULT_TIMEOUT = 10800;
const K8S_MAX_TIMEOUT = 86400;

/** The affinity timeout the chart must render for these values (values.yaml workerRouting.inCluster). */
export function expectedAffinityTimeout(values) {
  const set = values.workerRouting?.inCluster?.clientIPTimeoutSeconds;
  if (set !== undefined && set !== null) return set;
  const visibility = values.config?.GATEWAY_VISIBILITY_TIMEOUT ?? 60;
  return Math.min(K8S_MAX_TIMEOUT, Math.max(K8S_DEFAULT_TIMEOUT, 3 * visibility));
}

/** Values the chart must refuse, and why (merged into check-chart's BAD_VALUES). */
export const WORKER_FLEET_BAD_VALUES = {
  'an affinity that lapses within the visibility timeout (chart check)': [
    { workerRouting: { inCluster: { sessionAffinity: 'ClientIP', clientIPTimeoutSeconds: 60 } } },
    /clientIPTimeoutSeconds \(60\) must be longer than config.GATEWAY_VISIBILITY_TIMEOUT \(60\)/,
  ],
  'an affinity shorter than a long visibility timeout (chart check)': [
    { config: { GATEWAY_VISIBILITY_TIMEOUT: 7200 }, workerRouting: { inCluster: { sessionAffinity: 'ClientIP', clientIPTimeoutSeconds: 3600 } } },
    /clientIPTimeoutSeconds/,
  ],
  'an affinity kind kube-proxy does not have (schema enum)': [
    { workerRouting: { inCluster: { sessionAffinity: 'Cookie' } } },
    /sessionAffinity/,
  ],
  'an affinity past Kubernetes\' one day (schema maximum)': [
    { workerRouting: { inCluster: { sessionAffinity: 'ClientIP', clientIPTimeoutSeconds: 86401 } } },
    /clientIPTimeoutSeconds/,
  ],
  'a scaled worker without its handler (schema required)': [
    { keda: { enabled: true, scaledWorkers: [{ name: 'echo', targetName: 'echo', applicationId: 1, threshold: 4, minReplicas: 0, maxReplicas: 3 }] } },
    /handler/,
  ],
  'a scaled worker with a zero threshold (schema minimum)': [
    { keda: { enabled: true, scaledWorkers: [{ name: 'echo', targetName: 'echo', applicationId: 1, handler: 'echo', threshold: 0, minReplicas: 0, maxReplicas: 3 }] } },
    /threshold/,
  ],
  'a handler that would break the PromQL string (schema pattern)': [
    { keda: { enabled: true, scaledWorkers: [{ name: 'echo', targetName: 'echo', applicationId: 1, handler: 'e"cho', threshold: 2, minReplicas: 0, maxReplicas: 3 }] } },
    /handler/,
  ],
  'a Prometheus address without a scheme (schema pattern)': [
    { keda: { enabled: true, prometheus: { serverAddress: 'prometheus:9090', namespaceLabel: 'namespace' } } },
    /serverAddress/,
  ],
  'a scaled worker whose minimum is above its maximum (chart check)': [
    { keda: { enabled: true, scaledWorkers: [{ name: 'echo', targetName: 'echo', applicationId: 1, handler: 'echo', threshold: 2, minReplicas: 5, maxReplicas: 3 }] } },
    /minReplicas \(5\) is above maxReplicas \(3\)/,
  ],
  'two scaled workers of one name (chart check)': [
    {
      keda: {
        enabled: true,
        scaledWorkers: [
          { name: 'echo', targetName: 'a', applicationId: 1, handler: 'echo', threshold: 2, minReplicas: 0, maxReplicas: 3 },
          { name: 'echo', targetName: 'b', applicationId: 2, handler: 'echo', threshold: 2, minReplicas: 0, maxReplicas: 3 },
        ],
      },
    },
    /appears twice/,
  ],
};

/**
 * Checks one rendered value set; returns what it covered ('ClientIP', 'None', 'keda') so
 * check-chart.mjs can fail when no value set exercises a case.
 */
export function checkWorkerFleet({ values, docs, notes, release, namespace, check }) {
  const covered = new Set();
  const full = `${release}-pipeline-orchestration`;
  const service = (s) => docs.find((d) => d.kind === 'Service' && d.metadata.name === `${full}-${s}`);

  // In-cluster routing: the worker-gateway Service alone carries the affinity.
  const affinity = values.workerRouting?.inCluster?.sessionAffinity ?? 'ClientIP';
  covered.add(affinity);
  const wg = service('worker-gateway');
  const port = values.services?.['worker-gateway']?.port ?? 8081;
  check(wg?.spec.sessionAffinity === affinity, `worker-gateway Service: sessionAffinity ${wg?.spec.sessionAffinity}, not ${affinity}`);
  const visibility = values.config?.GATEWAY_VISIBILITY_TIMEOUT ?? 60;
  const timeout = wg?.spec.sessionAffinityConfig?.clientIP?.timeoutSeconds;
  if (affinity === 'ClientIP') {
    check(timeout === expectedAffinityTimeout(values), `worker-gateway Service: ClientIP timeout ${timeout}, not ${expectedAffinityTimeout(values)}`);
    check(timeout > visibility && timeout <= K8S_MAX_TIMEOUT, `worker-gateway Service: ClientIP timeout ${timeout} s does not outlast the visibility timeout (${visibility} s) within Kubernetes' ${K8S_MAX_TIMEOUT} s`);
    check(notes.includes(`sessionAffinity is ClientIP (${timeout} s)`), 'NOTES.txt does not give the in-cluster affinity and its timeout');
  } else {
    check(wg?.spec.sessionAffinityConfig === undefined, 'worker-gateway Service: sessionAffinityConfig without ClientIP');
    check(notes.includes('sessionAffinity is None'), 'NOTES.txt does not warn that in-cluster workers are not kept on one pod');
  }
  for (const other of SERVICES.filter((s) => s !== 'worker-gateway')) {
    const svc = service(other);
    check(svc && svc.spec.sessionAffinity === undefined && svc.spec.sessionAffinityConfig === undefined, `${other} Service carries a session affinity`);
  }
  check(notes.includes(`http://${full}-worker-gateway.${namespace}.svc:${port}`), 'NOTES.txt does not give in-cluster workers the worker-gateway Service address');

  // KEDA: one ScaledObject per entry, each scaling its own Deployment on its own queue's backlog.
  const keda = values.keda ?? {};
  const wanted = keda.enabled ? (keda.scaledWorkers ?? []) : [];
  const scaled = docs.filter((d) => d.kind === 'ScaledObject');
  check(scaled.length === wanted.length, `expected ${wanted.length} ScaledObjects, got ${scaled.length}`);
  if (wanted.length) covered.add('keda');
  const defaults = { serverAddress: keda.prometheus?.serverAddress ?? 'http://prometheus-operated.monitoring.svc:9090', pollingInterval: keda.pollingInterval ?? 15, cooldownPeriod: keda.cooldownPeriod ?? 300 };
  const namespaceLabel = keda.prometheus?.namespaceLabel ?? 'namespace';
  const gaugeServed = new RegExp(`name: '${BACKLOG_GAUGE}'[\\s\\S]{0,400}labelNames: \\['queue', 'state'\\]`).test(GAUGES);
  check(!wanted.length || gaugeServed, `libs/telemetry/src/gauges.ts no longer serves ${BACKLOG_GAUGE} with labels queue and state, which the ScaledObjects query`);
  for (const w of wanted) {
    const so = scaled.find((d) => d.metadata.name === `${full}-${w.name}`);
    if (!so) {
      check(false, `no ScaledObject ${full}-${w.name}`);
      continue;
    }
    const spec = so.spec;
    const trigger = spec.triggers?.[0] ?? {};
    const m = trigger.metadata ?? {};
    check(spec.scaleTargetRef?.kind === 'Deployment' && spec.scaleTargetRef.apiVersion === 'apps/v1' && spec.scaleTargetRef.name === w.targetName, `${w.name}: scales ${JSON.stringify(spec.scaleTargetRef)}, not Deployment ${w.targetName}`);
    check(spec.minReplicaCount === w.minReplicas && spec.maxReplicaCount === w.maxReplicas, `${w.name}: replicas ${spec.minReplicaCount}..${spec.maxReplicaCount}, not ${w.minReplicas}..${w.maxReplicas}`);
    check(spec.pollingInterval === (w.pollingInterval ?? defaults.pollingInterval) && spec.cooldownPeriod === (w.cooldownPeriod ?? defaults.cooldownPeriod), `${w.name}: polling ${spec.pollingInterval} s, cooldown ${spec.cooldownPeriod} s`);
    check(spec.triggers?.length === 1 && trigger.type === 'prometheus' && trigger.metricType === 'AverageValue', `${w.name}: not one Prometheus trigger of AverageValue`);
    check(m.serverAddress === (w.serverAddress ?? defaults.serverAddress), `${w.name}: asks ${m.serverAddress}`);
    // KEDA reads trigger metadata as strings; a number there is refused by its admission webhook.
    check(m.threshold === String(w.threshold) && m.activationThreshold === String(w.activationThreshold ?? 0), `${w.name}: threshold ${JSON.stringify(m.threshold)}, activation ${JSON.stringify(m.activationThreshold)}`);
    const query = m.query ?? '';
    let selectors = [];
    try {
      selectors = analyse(query).selectors;
    } catch (err) {
      check(false, `${w.name}: the query does not parse as PromQL (${err.message}): ${query}`);
    }
    check(selectors.length === 1 && selectors[0].name === BACKLOG_GAUGE, `${w.name}: the query selects ${selectors.map((s) => s.name).join(', ')}, not ${BACKLOG_GAUGE} alone`);
    check(query.includes(`queue="app_${w.applicationId}_${w.handler}_StageNext"`), `${w.name}: the query does not select queue app_${w.applicationId}_${w.handler}_StageNext`);
    check(query.includes('state=~"waiting|active"') && /max by \(state\)/.test(query), `${w.name}: the backlog is not waiting + active, each the largest report`);
    check(namespaceLabel ? query.includes(`${namespaceLabel}="${namespace}"`) : !/namespace=/.test(query), `${w.name}: the namespace matcher does not follow keda.prometheus.namespaceLabel`);
  }
  check(keda.enabled ? notes.includes('kubectl -n ' + namespace + ' get scaledobjects,hpa') : !notes.includes('scaledobjects'), 'NOTES.txt and keda.enabled disagree');
  return covered;
}
