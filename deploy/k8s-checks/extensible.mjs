// The chart's extension points (check-chart.mjs; decision 0128, values.yaml "Pods"): each top-level
// pod extra lands on every service (and, for those the migration Job takes, on the Job), a
// service's own value replaces the top-level one on that service only, Service annotations on the
// right Service, and DATABASE_URL and REDIS_URL given in parts are built with the password read
// from its Secret into a variable defined before the URL that expands it. Bad values are refused.
import { SERVICES } from './value-sets.mjs';

/** Pod extras in the order values.yaml lists them; a service's value (not null) replaces the top-level one. */
export const POD_EXTRAS = [
  'extraEnv',
  'envFrom',
  'extraVolumes',
  'extraVolumeMounts',
  'extraContainers',
  'initContainers',
  'priorityClassName',
  'podAnnotations',
  'podLabels',
  'nodeSelector',
  'tolerations',
  'affinity',
  'topologySpreadConstraints',
  'serviceAnnotations',
];

/**
 * The pod extras the migration Job takes: not the sidecars (they would keep it running), nor
 * what only a Deployment or a Service has (affinity as before, the spread, Service annotations).
 */
const JOB_EXTRAS = POD_EXTRAS.filter(
  (k) => !['extraContainers', 'affinity', 'topologySpreadConstraints', 'serviceAnnotations'].includes(k),
);

/** Values the chart must refuse, and why (merged into check-chart's BAD_VALUES). */
export const EXTENSIBLE_BAD_VALUES = {
  'a misspelled pod extra (schema additionalProperties)': [
    { extraEnvs: [{ name: 'A', value: '1' }] },
    /extraEnvs/,
  ],
  'a misspelled pod extra of one service (schema additionalProperties)': [
    { services: { 'api-gateway': { sidecars: [] } } },
    /sidecars/,
  ],
  'tolerations as a map (schema type)': [
    { tolerations: { key: 'dedicated', operator: 'Exists' } },
    /tolerations/,
  ],
  "one service's sidecars as a map (schema type)": [
    { services: { 'result-consumer': { extraContainers: { name: 'x', image: 'busybox' } } } },
    /extraContainers/,
  ],
  'an env entry without a name (schema required)': [{ extraEnv: [{ value: 'x' }] }, /extraEnv/],
  'a sidecar without an image (schema required)': [
    { extraContainers: [{ name: 'proxy' }] },
    /extraContainers/,
  ],
  'a Service annotation that is not a string (schema type)': [
    { serviceAnnotations: { 'example.com/weight': 3 } },
    /serviceAnnotations/,
  ],
  'the database as a URL Secret and in parts at once (schema if/then)': [
    { database: { host: 'db.internal', user: 'po' } },
    /database\/urlSecret\/name/,
  ],
  'the database in parts without a user (schema if/then)': [
    { database: { host: 'db.internal', urlSecret: { name: '', key: 'DATABASE_URL' } } },
    /database\/user/,
  ],
  'a database password Secret beside a URL Secret (schema if/then)': [
    { database: { passwordSecret: { name: 'po-db-password', key: 'password' } } },
    /database\/passwordSecret/,
  ],
  'no database at all (schema if/then)': [
    { database: { urlSecret: { name: '', key: 'DATABASE_URL' } } },
    /database\/urlSecret\/name/,
  ],
  'a database password as a value (schema additionalProperties)': [
    { database: { password: 'secret' } },
    /password/,
  ],
  "the database in parts with the chart's PgBouncer (chart check)": [
    {
      pgbouncer: { enabled: true },
      database: {
        urlSecret: { name: '', key: 'DATABASE_URL' },
        host: 'db.internal',
        user: 'po',
        directUrlSecret: { name: 'd', key: 'k' },
      },
    },
    /pgbouncer\.enabled with database\.host/,
  ],
  'Redis as a URL Secret and a host at once (schema if/then)': [
    { redis: { host: 'redis.internal' } },
    /redis\/urlSecret\/name/,
  ],
  'a Redis host with sentinels (schema if/then)': [
    {
      redis: {
        host: 'redis.internal',
        urlSecret: { name: '', key: 'REDIS_URL' },
        sentinel: { hosts: ['s:26379'], masterName: 'm' },
      },
    },
    /sentinel\/hosts/,
  ],
};

/** The same JSON, whatever the order of its object keys (toYaml sorts them). */
const canonical = (v) =>
  JSON.stringify(v, (_, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );
export const same = (a, b) => canonical(a) === canonical(b);
const component = (d) => d.metadata?.labels?.['app.kubernetes.io/component'];
const fromSecret = (e, ref) =>
  e?.value === undefined &&
  e?.valueFrom?.secretKeyRef?.name === ref.name &&
  e.valueFrom.secretKeyRef.key === ref.key;

/** What one service's pods get: its own value when set (not null), else the top-level one. */
export function podExtras(values, service) {
  const own = values.services?.[service] ?? {};
  return Object.fromEntries(
    POD_EXTRAS.map((key) => [key, own[key] ?? values[key] ?? null]).filter(([, v]) => v !== null),
  );
}

const bracketed = (host) => (host.includes(':') && !host.startsWith('[') ? `[${host}]` : host);

/** DATABASE_URL as the values ask for it: null when it comes from database.urlSecret. */
export function databaseUrlExpectation(values) {
  const d = values.database ?? {};
  if (!d.host) return null;
  const password = d.passwordSecret?.name ? d.passwordSecret : null;
  // Go's url.QueryEscape, as the template's urlquery: space to +, the unreserved kept.
  const user = encodeURIComponent(d.user)
    .replace(/%20/g, '+')
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const url = `postgresql://${user}${password ? ':$(PO_DATABASE_PASSWORD)' : ''}@${bracketed(d.host)}:${d.port ?? 5432}/${d.name ?? 'pipeline_orchestration'}${d.params ? `?${d.params}` : ''}`;
  return { url, password };
}

/** DATABASE_URL built from parts: the password variable from its Secret first, then the URL that expands it. */
function checkDatabaseParts(who, container, want, check) {
  const env = container?.env ?? [];
  const at = (name) => env.findIndex((e) => e.name === name);
  const url = env[at('DATABASE_URL')];
  check(
    url?.value === want.url && !url.valueFrom,
    `${who}: DATABASE_URL is ${JSON.stringify(url)}, not the URL built from database.host and the parts (${want.url})`,
  );
  if (want.password) {
    const password = env[at('PO_DATABASE_PASSWORD')];
    check(
      fromSecret(password, want.password),
      `${who}: PO_DATABASE_PASSWORD is not a secretKeyRef to ${want.password.name}/${want.password.key}`,
    );
    check(
      at('PO_DATABASE_PASSWORD') >= 0 && at('PO_DATABASE_PASSWORD') < at('DATABASE_URL'),
      `${who}: PO_DATABASE_PASSWORD is not defined before DATABASE_URL, so Kubernetes would not expand $(PO_DATABASE_PASSWORD)`,
    );
  } else
    check(
      at('PO_DATABASE_PASSWORD') < 0 && !want.url.includes('$('),
      `${who}: a password variable without database.passwordSecret`,
    );
}

/** One pod spec against the extras it should carry; `job` checks the migration Job's subset. */
function checkPod(who, pod, meta, want, chartEnv, check, { job = false } = {}) {
  const c = pod.containers[0];
  const tail = (list, n) => (list ?? []).slice((list ?? []).length - n);
  const extraEnv = want.extraEnv ?? [];
  check(
    same(tail(c.env, extraEnv.length), extraEnv),
    `${who}: the container's env does not end with ${JSON.stringify(extraEnv)}`,
  );
  const strays = (c.env ?? [])
    .map((e) => e.name)
    .filter((n) => !chartEnv.has(n) && !extraEnv.some((x) => x.name === n));
  check(
    strays.length === 0,
    `${who}: env ${strays.join(', ')} that neither the chart nor its extraEnv sets (another service's override?)`,
  );
  const envFrom = want.envFrom ?? [];
  check(
    same(tail(c.envFrom, envFrom.length), envFrom) &&
      (c.envFrom ?? []).length === envFrom.length + (job ? 0 : 1),
    `${who}: envFrom is ${JSON.stringify(c.envFrom)}, not the chart's ConfigMap then ${JSON.stringify(envFrom)}`,
  );
  const mounts = want.extraVolumeMounts ?? [];
  check(
    same(tail(c.volumeMounts, mounts.length), mounts),
    `${who}: the container's volumeMounts do not end with ${JSON.stringify(mounts)}`,
  );
  const volumes = want.extraVolumes ?? [];
  check(
    same(tail(pod.volumes, volumes.length), volumes),
    `${who}: the pod's volumes do not end with ${JSON.stringify(volumes)}`,
  );
  const sidecars = job ? [] : (want.extraContainers ?? []);
  check(
    same(pod.containers.slice(1), sidecars),
    `${who}: containers after the service's are ${JSON.stringify(pod.containers.slice(1).map((x) => x.name))}, not ${JSON.stringify(sidecars.map((x) => x.name))}`,
  );
  const inits = want.initContainers ?? [];
  check(
    same(pod.initContainers ?? [], inits),
    `${who}: initContainers ${JSON.stringify((pod.initContainers ?? []).map((x) => x.name))}, not ${JSON.stringify(inits.map((x) => x.name))}`,
  );
  check(
    (pod.priorityClassName ?? '') === (want.priorityClassName ?? ''),
    `${who}: priorityClassName ${pod.priorityClassName}, not ${want.priorityClassName}`,
  );
  for (const [key, got] of [
    ['nodeSelector', pod.nodeSelector],
    ['tolerations', pod.tolerations],
  ])
    check(
      same(got ?? null, want[key] && Object.keys(want[key]).length ? want[key] : null),
      `${who}: ${key} ${JSON.stringify(got)}, not ${JSON.stringify(want[key])}`,
    );
  for (const [key, value] of Object.entries(want.podLabels ?? {}))
    check(
      meta.labels?.[key] === value,
      `${who}: pod label ${key} is ${meta.labels?.[key]}, not ${value}`,
    );
  for (const [key, value] of Object.entries(want.podAnnotations ?? {}))
    check(
      meta.annotations?.[key] === value,
      `${who}: pod annotation ${key} is ${meta.annotations?.[key]}, not ${value}`,
    );
  if (job) return;
  check(
    same(
      pod.affinity ?? null,
      want.affinity && Object.keys(want.affinity).length ? want.affinity : null,
    ),
    `${who}: affinity ${JSON.stringify(pod.affinity)}, not ${JSON.stringify(want.affinity)}`,
  );
}

/** The env names the chart itself sets on a pod (anything else must come from extraEnv). */
const CHART_ENV = new Set([
  'HOST',
  'PORT',
  'METRICS_PORT',
  'DATABASE_POOL_MAX',
  'DATABASE_URL',
  'PO_DATABASE_PASSWORD',
  'DATABASE_DIRECT_URL',
  'DATABASE_CA_FILE',
  'WORKER_BROKER_CONNECTION_STRING',
  'DASHBOARD_TRACE_URL_TEMPLATE',
  'MIGRATION_DATABASE_URL',
  'MIGRATION_LOCK_TIMEOUT_MS',
  'MIGRATION_LOCK_RETRIES',
]);
const isChartEnv = { has: (name) => CHART_ENV.has(name) || name.startsWith('REDIS_') };

/** Checks one render; returns what it exercised, so check-chart can tell each extra was covered. */
export function checkExtensible({ values, docs, release, check }) {
  const covered = new Set();
  const db = databaseUrlExpectation(values);
  const selector = (service) => ({
    'app.kubernetes.io/component': service,
    'app.kubernetes.io/instance': release,
    'app.kubernetes.io/name': 'pipeline-orchestration',
  });
  for (const service of SERVICES) {
    const name = `${release}-pipeline-orchestration-${service}`;
    const dep = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === name);
    const svc = docs.find((d) => d.kind === 'Service' && d.metadata.name === name);
    if (!dep || !svc) {
      check(
        false,
        `${service}: no Deployment or Service rendered, so its pod extras cannot be checked`,
      );
      continue;
    }
    const want = podExtras(values, service);
    // A service's own value counts even when empty (it then takes the top-level one away).
    for (const [key, value] of Object.entries(want))
      if (values.services?.[service]?.[key] != null) covered.add(`services.*.${key}`);
      else if (value !== '' && JSON.stringify(value) !== '[]' && JSON.stringify(value) !== '{}')
        covered.add(key);
    const pod = dep.spec.template.spec;
    checkPod(service, pod, dep.spec.template.metadata, want, isChartEnv, check);
    // topologySpreadConstraints: yours replace the chart's, completed with the service's selector.
    const spread = (want.topologySpreadConstraints ?? []).map((t) =>
      t.labelSelector ? t : { labelSelector: { matchLabels: selector(service) }, ...t },
    );
    const chartSpread =
      (values.spreadAcrossNodes ?? true)
        ? [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'ScheduleAnyway',
              labelSelector: { matchLabels: selector(service) },
            },
          ]
        : [];
    check(
      same(pod.topologySpreadConstraints ?? [], spread.length ? spread : chartSpread),
      `${service}: topologySpreadConstraints ${JSON.stringify(pod.topologySpreadConstraints)}, not ${JSON.stringify(spread.length ? spread : chartSpread)}`,
    );
    const annotations = want.serviceAnnotations ?? {};
    check(
      same(svc.metadata.annotations ?? {}, annotations),
      `${service}: its Service's annotations are ${JSON.stringify(svc.metadata.annotations)}, not ${JSON.stringify(annotations)}`,
    );
    if (db) checkDatabaseParts(service, pod.containers[0], db, check);
  }
  const job = docs.find((d) => d.kind === 'Job' && component(d) === 'migrate');
  if (job) {
    const want = Object.fromEntries(
      JOB_EXTRAS.filter((k) => values[k] != null).map((k) => [k, values[k]]),
    );
    checkPod(
      'the migration Job',
      job.spec.template.spec,
      job.spec.template.metadata,
      want,
      isChartEnv,
      check,
      { job: true },
    );
    if (db && !values.migrations?.urlSecret?.name)
      checkDatabaseParts('the migration Job', job.spec.template.spec.containers[0], db, check);
  }
  const testPod = docs.find(
    (d) => d.kind === 'Pod' && d.metadata.annotations?.['helm.sh/hook'] === 'test',
  );
  if (db && testPod) checkDatabaseParts('the helm test Pod', testPod.spec.containers[0], db, check);
  if (db)
    covered.add(
      db.password ? 'database parts with a password Secret' : 'database parts without a password',
    );
  return covered;
}
