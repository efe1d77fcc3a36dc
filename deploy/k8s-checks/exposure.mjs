// Exposure facts of the rendered chart (decision 0085), for check-chart.mjs: metrics on their own
// port and never routed, the NetworkPolicy evaluated for the pods that matter, request bodies left
// to the services, TLS to PostgreSQL and the migration Job's own credentials.
import { BODY_RULE } from '../local/nginx.mjs';

const SERVICES = ['api-gateway', 'worker-gateway', 'pipeline-service', 'scheduler-service', 'result-consumer'];
const GATEWAYS = new Set(['api-gateway', 'worker-gateway']);
const CA_FILE = '/etc/pipeline-orchestration/db-ca/ca.crt';

const byKind = (docs, kind) => docs.filter((d) => d.kind === kind);
const named = (docs, kind, name) => docs.find((d) => d.kind === kind && d.metadata.name === name);
const envOf = (container) => Object.fromEntries((container.env ?? []).map((e) => [e.name, e]));

function selects(selector, labels) {
  if (!selector) return true;
  const ok = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    ok &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      if (operator === 'Exists') return key in labels;
      if (operator === 'DoesNotExist') return !(key in labels);
      if (operator === 'In') return values.includes(labels[key]);
      return !values.includes(labels[key]);
    })
  );
}

/**
 * Whether the rendered NetworkPolicies admit a TCP connection from `source` ({ namespace,
 * namespaceLabels, labels }) to `port` of pods labelled `target` in `namespace`, by the API's
 * rules: a pod no policy selects admits everything; a selected pod admits what some rule admits.
 */
export function admits(docs, namespace, target, port, source) {
  const policies = byKind(docs, 'NetworkPolicy').filter(
    (p) => (p.metadata.namespace ?? namespace) === namespace && (p.spec.policyTypes ?? ['Ingress']).includes('Ingress') && selects(p.spec.podSelector, target),
  );
  if (policies.length === 0) return true;
  const peerMatches = (peer) => {
    if (peer.ipBlock) return false;
    const nsOk = peer.namespaceSelector ? selects(peer.namespaceSelector, source.namespaceLabels) : source.namespace === namespace;
    return nsOk && selects(peer.podSelector, source.labels);
  };
  return policies.some((p) =>
    (p.spec.ingress ?? []).some(
      (rule) => (rule.from === undefined || rule.from.some(peerMatches)) && (rule.ports === undefined || rule.ports.some((pt) => pt.port === port && (pt.protocol ?? 'TCP') === 'TCP')),
    ),
  );
}

/** Checks every exposure fact of one rendered value set; `check(ok, message)` records failures. */
export function checkExposure({ values, docs, notes, release, namespace, svcName, check }) {
  const np = values.networkPolicy?.enabled ?? false;
  const ports = Object.fromEntries(
    SERVICES.map((s) => {
      const c = named(docs, 'Deployment', svcName(s))?.spec.template.spec.containers[0];
      const byName = Object.fromEntries((c?.ports ?? []).map((p) => [p.name, p.containerPort]));
      return [s, { http: byName.http, metrics: byName.metrics, container: c, pod: named(docs, 'Deployment', svcName(s))?.spec.template }];
    }),
  );

  // GET /metrics has a port of its own, which the Service names for the ServiceMonitor.
  for (const s of SERVICES) {
    const { http, metrics, container, pod } = ports[s];
    if (!container) continue;
    const env = envOf(container);
    check(metrics && metrics !== http, `${s}: no container port "metrics" apart from "http" (${http}/${metrics})`);
    check(env.METRICS_PORT?.value === String(metrics), `${s}: METRICS_PORT ${env.METRICS_PORT?.value} is not the metrics container port ${metrics}`);
    const svcPorts = Object.fromEntries((named(docs, 'Service', svcName(s))?.spec.ports ?? []).map((p) => [p.name, p]));
    check(svcPorts.metrics?.targetPort === 'metrics' && svcPorts.metrics.port === metrics, `${s}: the Service has no port "metrics" to the metrics port`);
    const a = pod?.metadata.annotations ?? {};
    const overridden = 'prometheus.io/scrape' in (values.podAnnotations ?? {});
    if ((values.metrics?.scrapeAnnotations ?? true) && !overridden) {
      check(a['prometheus.io/scrape'] === 'true' && a['prometheus.io/port'] === String(metrics) && a['prometheus.io/path'] === '/metrics', `${s}: scrape annotations do not name the metrics port`);
    }
    if (overridden) check(a['prometheus.io/scrape'] === values.podAnnotations['prometheus.io/scrape'], `${s}: podAnnotations did not override the scrape annotation`);
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) check(container[probe]?.httpGet?.port === 'http', `${s}: ${probe} is not on the API port`);
  }
  const apiPorts = new Set(SERVICES.map((s) => ports[s].http));
  const metricsPorts = new Set(SERVICES.map((s) => ports[s].metrics));
  for (const ing of byKind(docs, 'Ingress')) {
    for (const path of ing.spec.rules.flatMap((r) => r.http.paths)) {
      const port = path.backend.service.port.number;
      check(apiPorts.has(port) && !metricsPorts.has(port), `Ingress ${ing.metadata.name} routes ${path.path} to port ${port}, not an API port`);
    }
    const a = ing.metadata.annotations ?? {};
    for (const [annotation, { value }] of Object.entries(BODY_RULE)) {
      const wanted = values.ingress?.annotations?.[annotation] ?? value;
      check(a[annotation] === wanted, `Ingress ${ing.metadata.name}: ${annotation} is ${a[annotation]}, not ${wanted} (deploy/local/nginx.mjs BODY_RULE)`);
    }
  }
  for (const route of byKind(docs, 'HTTPRoute')) {
    for (const ref of route.spec.rules.flatMap((r) => r.backendRefs)) {
      check(apiPorts.has(ref.port) && !metricsPorts.has(ref.port), `HTTPRoute ${route.metadata.name} routes to port ${ref.port}, not an API port`);
    }
  }
  for (const sm of byKind(docs, 'ServiceMonitor')) {
    check(sm.spec.endpoints.length > 0 && sm.spec.endpoints.every((e) => e.port === 'metrics' && e.path === '/metrics'), 'the ServiceMonitor does not scrape port "metrics"');
  }

  // NetworkPolicy: evaluated for the pods that matter, not just present.
  const policies = byKind(docs, 'NetworkPolicy');
  const expected = np ? SERVICES.length + (values.pgbouncer?.enabled ? 1 : 0) : 0; // PgBouncer's: pgbouncer.mjs
  check(policies.length === expected, `expected ${expected} NetworkPolicies, got ${policies.length}`);
  for (const p of policies) {
    check(JSON.stringify(p.spec.policyTypes) === '["Ingress"]', `${p.metadata.name}: policyTypes ${JSON.stringify(p.spec.policyTypes)}`);
    for (const rule of p.spec.ingress ?? []) check(rule.from?.length > 0 && rule.ports?.length > 0, `${p.metadata.name}: a rule without from or ports admits everyone`);
  }
  const controller = values.networkPolicy?.ingressController ?? {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } },
    podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } },
  };
  const from = (ns, labels) => ({ namespace: ns, namespaceLabels: { 'kubernetes.io/metadata.name': ns }, labels });
  const sources = {
    'the ingress controller': from(controller.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] ?? namespace, controller.podSelector?.matchLabels ?? {}),
    Prometheus: from('monitoring', { 'app.kubernetes.io/name': 'prometheus' }),
    'another pod of the release namespace': from(namespace, { app: 'curious' }),
    'another pod of the ingress namespace': from('ingress-nginx', { app: 'curious' }),
  };
  for (const s of SERVICES) {
    const target = { 'app.kubernetes.io/name': 'pipeline-orchestration', 'app.kubernetes.io/instance': release, 'app.kubernetes.io/component': s };
    const { http, metrics } = ports[s];
    const expect = {
      'the ingress controller': { [http]: GATEWAYS.has(s), [metrics]: false },
      Prometheus: { [http]: false, [metrics]: true },
      'another pod of the release namespace': { [http]: false, [metrics]: false },
      'another pod of the ingress namespace': { [http]: false, [metrics]: false },
    };
    for (const [who, byPort] of Object.entries(expect)) {
      for (const [port, allowed] of Object.entries(byPort)) {
        const got = admits(docs, namespace, target, Number(port), sources[who]);
        check(np ? got === allowed : got === true, `${who} ${got ? 'reaches' : 'cannot reach'} ${s}:${port}${np ? '' : ' with networkPolicy off'}`);
      }
    }
    for (const extra of values.networkPolicy?.extraGatewaySources ?? []) {
      const source = from(extra.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] ?? namespace, extra.podSelector?.matchLabels ?? {});
      source.namespaceLabels = { ...source.namespaceLabels, ...(extra.namespaceSelector?.matchLabels ?? {}) };
      if (np) check(admits(docs, namespace, target, http, source) === GATEWAYS.has(s), `extraGatewaySources ${JSON.stringify(extra)} vs ${s}:${http}`);
    }
  }
  check(notes.includes(np ? 'NetworkPolicy: on' : 'NetworkPolicy: off'), 'NOTES.txt does not say whether the NetworkPolicy is on');
  check(notes.includes('answers 404 on the API ports'), 'NOTES.txt does not say where GET /metrics is');

  // The broker hand-out: said loudly wherever it is on.
  const handout = values.config?.WORKER_BROKER_HANDOUT ?? false;
  check(notes.includes('WARNING: the broker hand-out is ON') === handout, `NOTES.txt broker hand-out warning ${handout ? 'missing' : 'shown while off'}`);

  // TLS to PostgreSQL: the CA reaches every process that connects, the migration Job included.
  const ca = values.database?.caCert ?? {};
  const caSource = ca.secretName ? { secret: ca.secretName } : ca.configMapName ? { configMap: ca.configMapName } : null;
  const pods = [...SERVICES.map((s) => ports[s].pod?.spec), ...byKind(docs, 'Job').map((j) => j.spec.template.spec)].filter(Boolean);
  for (const pod of pods) {
    const c = pod.containers[0];
    const env = envOf(c);
    const volume = pod.volumes?.find((v) => v.name === 'db-ca');
    if (!caSource) {
      check(!env.DATABASE_CA_FILE && !volume, `${c.name}: DATABASE_CA_FILE without database.caCert`);
      continue;
    }
    const mount = c.volumeMounts?.find((m) => m.name === 'db-ca');
    const from = volume?.secret ? { secret: volume.secret.secretName, items: volume.secret.items } : { configMap: volume?.configMap?.name, items: volume?.configMap?.items };
    check(env.DATABASE_CA_FILE?.value === CA_FILE, `${c.name}: DATABASE_CA_FILE is ${env.DATABASE_CA_FILE?.value}`);
    check(mount?.readOnly && CA_FILE.startsWith(`${mount.mountPath}/`), `${c.name}: the CA is not mounted read-only where DATABASE_CA_FILE points`);
    check((from.secret ?? from.configMap) === (caSource.secret ?? caSource.configMap) && from.items?.[0]?.key === (ca.key ?? 'ca.crt') && from.items[0].path === 'ca.crt', `${c.name}: the CA volume does not hold ${JSON.stringify(caSource)} key ${ca.key}`);
  }

  // The migration Job's own credentials: only MIGRATION_DATABASE_URL when set, never both.
  const job = byKind(docs, 'Job')[0];
  if (job) {
    const env = envOf(job.spec.template.spec.containers[0]);
    const own = values.migrations?.urlSecret?.name;
    if (own) {
      check(env.MIGRATION_DATABASE_URL?.valueFrom?.secretKeyRef?.name === own && env.MIGRATION_DATABASE_URL.valueFrom.secretKeyRef.key === (values.migrations.urlSecret.key ?? 'MIGRATION_DATABASE_URL'), 'the migration Job does not read MIGRATION_DATABASE_URL from migrations.urlSecret');
      check(!env.DATABASE_URL, 'the migration Job also gets the services\' DATABASE_URL');
    } else check((env.DATABASE_URL?.valueFrom?.secretKeyRef || (values.database?.host && env.DATABASE_URL?.value)) && !env.MIGRATION_DATABASE_URL, 'the migration Job must read DATABASE_URL when migrations.urlSecret is unset');
  }
}
