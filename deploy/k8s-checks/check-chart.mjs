#!/usr/bin/env node
// Chart checks (run by deploy/k8s-checks/run.sh, which passes HELM=<pinned helm binary>):
//   1. `helm lint --strict` and `helm template` for every value set below;
//   2. every rendered document typechecked against the Kubernetes 1.30 schemas (kubernetes-types
//      with tsc; the Gateway API and Envoy Gateway objects against deploy/k8s-checks/types), with
//      deliberately broken documents that must fail, so the check cannot pass vacuously;
//   3. the facts that matter: five services with probes, drain and secrets by reference, the
//      migration hook, the routing table of the one base URL, the sticky rule of each mode, and
//      what is exposed to whom (exposure.mjs: metrics ports, NetworkPolicy, bodies, TLS);
//   4. bad values fail at render time (values.schema.json and the chart's own checks);
//   5. every Kubernetes version the chart claims, 1.20 on (compat.mjs): the API versions chosen
//      there, only kinds that version serves, the oldest render typechecked against its schemas;
//   6. the PostgreSQL connection budget of each render, the default install within a default
//      PostgreSQL's (budget.mjs), and the direct URL and the chart's PgBouncer (pgbouncer.mjs);
//   7. Redis: the topology each value set names (one URL, Sentinel, cluster), its passwords and CA
//      on every pod that talks to Redis (redis.mjs), each topology and CA source rendered once;
//   8. the pod extras and the addresses in parts (extensible.mjs): each one rendered where it
//      belongs, a service's own value on that service only, each one rendered at least once;
//   9. the worker fleet (worker-fleet.mjs): the in-cluster affinity of the worker-gateway Service
//      and the KEDA ScaledObjects' backlog queries, each case rendered at least once.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { budgetRefusesOverflow, checkBudget, LIMIT, readCaps } from './budget.mjs';
import { brokenOldDocuments, checkKubeVersions, SCHEMAS_1_21 } from './compat.mjs';
import { checkExposure } from './exposure.mjs';
import { checkExtensible, EXTENSIBLE_BAD_VALUES, POD_EXTRAS, same } from './extensible.mjs';
import { checkPgbouncer, PGBOUNCER_BAD_VALUES } from './pgbouncer.mjs';
import { checkRedis, REDIS_BAD_VALUES } from './redis.mjs';
import { VALUE_SETS } from './value-sets.mjs';
import { checkWorkerFleet, WORKER_FLEET_BAD_VALUES } from './worker-fleet.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHART = join(ROOT, 'helm', 'pipeline-orchestration');
const WORK = join(ROOT, '.tools', 'k8s-checks');
const HELM = process.env.HELM;
const KUBE_VERSION = '1.30.0';
const SERVICES = ['api-gateway', 'worker-gateway', 'pipeline-service', 'scheduler-service', 'result-consumer'];
const RELEASE = 'po';
const NAMESPACE = 'pipelines';
if (!HELM) throw new Error('set HELM to the helm binary (deploy/k8s-checks/run.sh does)');

/** Values that must be refused, and a piece of the message that must explain why. */
const BAD_VALUES = {
  'unknown sticky mode (schema enum)': [{ workerRouting: { sticky: 'sticky-please' } }, /sticky/],
  'a database URL as a value (schema: only Secret references)': [{ database: { url: 'postgresql://po:secret@db/po' } }, /database/],
  'visibility timeout 0 (schema minimum)': [{ config: { GATEWAY_VISIBILITY_TIMEOUT: 0 } }, /GATEWAY_VISIBILITY_TIMEOUT/],
  'replicas as text (schema type)': [{ services: { 'worker-gateway': { replicas: 'two' } } }, /replicas/],
  'misspelled key (schema additionalProperties)': [{ workerRoutng: { sticky: 'none' } }, /workerRoutng/],
  'a hash on something other than a header (schema pattern)': [{ workerRouting: { hashBy: '$remote_addr' } }, /hashBy/],
  'grace period shorter than the drain (chart check)': [{ terminationGracePeriodSeconds: 12 }, /terminationGracePeriodSeconds/],
  'no stickiness with two worker-gateways (chart check)': [{ workerRouting: { sticky: 'none' } }, /sticky is none/],
  'Gateway API without a Gateway (chart check)': [{ ingress: { enabled: false }, gatewayApi: { enabled: true } }, /parentRefs/],
  'broker hand-out without its Secret (chart check)': [{ config: { WORKER_BROKER_HANDOUT: true, WORKER_BROKER_HANDOUT_ACK: 'tenants-share-redis' } }, /workerBrokerSecret/],
  'broker hand-out without the acknowledgement (chart check)': [{ config: { WORKER_BROKER_HANDOUT: true }, workerBrokerSecret: { name: 'po-broker', key: 'url' } }, /WORKER_BROKER_HANDOUT_ACK=tenants-share-redis/],
  'broker hand-out acknowledged loosely (schema enum)': [{ config: { WORKER_BROKER_HANDOUT: true, WORKER_BROKER_HANDOUT_ACK: 'yes' }, workerBrokerSecret: { name: 'po-broker', key: 'url' } }, /WORKER_BROKER_HANDOUT_ACK/],
  'metrics on the API port (chart check)': [{ services: { 'pipeline-service': { metricsPort: 8082 } } }, /metricsPort must differ from port/],
  'a CA from a Secret and a ConfigMap at once (chart check)': [{ database: { caCert: { secretName: 'a', configMapName: 'b', key: 'ca.crt' } } }, /caCert/],
  'a NetworkPolicy source that selects nothing (schema minProperties)': [{ networkPolicy: { enabled: true, ingressController: { namespaceSelector: null, podSelector: null } } }, /ingressController/],
  'negative retention (schema minimum)': [{ config: { RETENTION_WORKER_EVENTS_DAYS: -1 } }, /RETENTION_WORKER_EVENTS_DAYS/],
  ...PGBOUNCER_BAD_VALUES,
  ...REDIS_BAD_VALUES,
  ...EXTENSIBLE_BAD_VALUES,
  ...WORKER_FLEET_BAD_VALUES,
};

/** Where each rendered kind's schema comes from (a type in a .d.ts, imported by the typecheck). */
const SCHEMAS = {
  'v1/ConfigMap': ['kubernetes-types/core/v1', 'ConfigMap'],
  'v1/Service': ['kubernetes-types/core/v1', 'Service'],
  'v1/ServiceAccount': ['kubernetes-types/core/v1', 'ServiceAccount'],
  'v1/Pod': ['kubernetes-types/core/v1', 'Pod'], // the helm test hook
  'apps/v1/Deployment': ['kubernetes-types/apps/v1', 'Deployment'],
  'batch/v1/Job': ['kubernetes-types/batch/v1', 'Job'],
  'policy/v1/PodDisruptionBudget': ['kubernetes-types/policy/v1', 'PodDisruptionBudget'],
  'autoscaling/v2/HorizontalPodAutoscaler': ['kubernetes-types/autoscaling/v2', 'HorizontalPodAutoscaler'],
  'networking.k8s.io/v1/Ingress': ['kubernetes-types/networking/v1', 'Ingress'],
  'networking.k8s.io/v1/NetworkPolicy': ['kubernetes-types/networking/v1', 'NetworkPolicy'],
  'monitoring.coreos.com/v1/ServiceMonitor': ['../../deploy/k8s-checks/types/prometheus-operator.mjs', 'ServiceMonitor'],
  'monitoring.coreos.com/v1/PrometheusRule': ['../../deploy/k8s-checks/types/prometheus-operator.mjs', 'PrometheusRule'],
  'gateway.networking.k8s.io/v1/HTTPRoute': ['../../deploy/k8s-checks/types/gateway-api.mjs', 'HTTPRoute'],
  'gateway.envoyproxy.io/v1alpha1/BackendTrafficPolicy': ['../../deploy/k8s-checks/types/envoy-gateway.mjs', 'BackendTrafficPolicy'],
  'keda.sh/v1alpha1/ScaledObject': ['../../deploy/k8s-checks/types/keda.mjs', 'ScaledObject'],
};

const failures = [];
const fail = (set, msg) => failures.push(`[${set}] ${msg}`);
const check = (set, ok, msg) => (ok ? undefined : fail(set, msg));

function valuesFile(name, values) {
  const file = join(WORK, `values-${name.replace(/[^a-z0-9-]+/gi, '-')}.json`);
  writeFileSync(file, JSON.stringify(values, null, 2)); // JSON is YAML
  return file;
}

function helm(args) {
  return spawnSync(HELM, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
}

function render(name, values) {
  const file = valuesFile(name, values);
  const lint = helm(['lint', '--strict', CHART, '-f', file, '--kube-version', KUBE_VERSION]);
  if (lint.status !== 0) fail(name, `helm lint --strict failed:\n${lint.stdout}${lint.stderr}`);
  const out = helm(['template', RELEASE, CHART, '-n', NAMESPACE, '--kube-version', KUBE_VERSION, '-f', file]);
  if (out.status !== 0) {
    fail(name, `helm template failed:\n${out.stderr}`);
    return null;
  }
  const docs = parse(name, out.stdout);
  const notes = helm(['install', RELEASE, CHART, '-n', NAMESPACE, '--dry-run=client', '-f', file]);
  if (notes.status !== 0) fail(name, `helm install --dry-run=client failed:\n${notes.stderr}`);
  return { text: out.stdout, docs, notes: notes.stdout.split('NOTES:')[1] ?? '' };
}

function parse(name, text) {
  const docs = parseAllDocuments(text).map((d) => {
    if (d.errors.length) fail(name, `rendered YAML does not parse: ${d.errors[0].message}`);
    return d.toJS();
  });
  return docs.filter((d) => d !== null);
}

// ---- typecheck: one .ts file per value set, each document `satisfies` its kind's type
function typecheckSource(name, docs, schemas = SCHEMAS) {
  const imports = new Map();
  const lines = [];
  docs.forEach((doc, i) => {
    const key = `${doc.apiVersion}/${doc.kind}`;
    const schema = schemas[key];
    if (!schema) return fail(name, `no schema for ${key} (${doc.metadata?.name}): add one to SCHEMAS (SCHEMAS_1_21 for the oldest version)`);
    if (!imports.has(schema[0])) imports.set(schema[0], `S${imports.size}`);
    lines.push(`export const d${i} = ${JSON.stringify(doc)} satisfies ${imports.get(schema[0])}.${schema[1]};`);
  });
  const head = [...imports].map(([from, alias]) => `import type * as ${alias} from '${from}';`);
  return `// Generated by deploy/k8s-checks/check-chart.mjs from \`helm template\` (${name}).\n${head.join('\n')}\n${lines.join('\n')}\n`;
}

/** Documents that must fail the typecheck, each with one mistake, typed as the kind they claim. */
function brokenDocuments(docs) {
  const clone = (kind) => structuredClone(docs.find((d) => d.kind === kind));
  const deployment = clone('Deployment');
  const container = deployment.spec.template.spec.containers[0];
  container.livenesProbe = container.livenessProbe; // misspelled field
  const ingress = clone('Ingress');
  const backend = ingress.spec.rules[0].http.paths[0].backend;
  ingress.spec.rules[0].http.paths[0].backend = { serviceName: backend.service.name, servicePort: 8080 }; // the removed v1beta1 shape
  const pdb = clone('PodDisruptionBudget');
  pdb.apiVersion = 'policy/v1beta1'; // removed in Kubernetes 1.25
  const job = clone('Job');
  delete job.spec.template; // required
  const route = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name: 'x' }, spec: { rules: [{ sessionPersistance: { type: 'Cookie' } }] } };
  const policy = {
    apiVersion: 'gateway.envoyproxy.io/v1alpha1',
    kind: 'BackendTrafficPolicy',
    metadata: { name: 'x' },
    spec: { loadBalancer: { type: 'ConsistentHash', consistentHash: { type: 'Header', header: { nam: 'x' } } } },
  };
  const networkPolicy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'x' },
    spec: { podSelector: {}, ingress: [{ form: [{ podSelector: {} }] }] }, // misspelled `from`
  };
  const monitor = { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { name: 'x' }, spec: { selector: {}, endpoints: [{ port: 'metrics', scrapeInterval: '30s' }] } };
  const scaled = {
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'ScaledObject',
    metadata: { name: 'x' },
    spec: { scaleTargetRef: { name: 'w' }, maxReplicas: 3, triggers: [{ type: 'prometheus', metadata: { threshold: 4 } }] }, // HPA's field name, a number
  };
  return [deployment, ingress, pdb, job, route, policy, networkPolicy, monitor, scaled].map((doc) => ({
    doc,
    as: doc.apiVersion === 'policy/v1beta1' ? 'policy/v1/PodDisruptionBudget' : `${doc.apiVersion}/${doc.kind}`,
  }));
}

function typecheck(rendered, kubeRenders) {
  const files = [];
  const sources = [
    ...Object.entries(rendered).map(([name, r]) => [name, r.docs, SCHEMAS]),
    ...kubeRenders.filter((r) => r.types).map((r) => [r.name, r.docs, r.types === '1.21' ? SCHEMAS_1_21 : SCHEMAS]),
  ];
  for (const [name, docs, schemas] of sources) {
    const file = join(WORK, `${name}.ts`);
    writeFileSync(file, typecheckSource(name, docs, schemas));
    files.push(file);
  }
  // The broken documents, typed as the kind they pretend to be.
  const broken = [...brokenDocuments(rendered.default.docs), ...brokenOldDocuments(kubeRenders)];
  const lines = [];
  const imports = new Map();
  broken.forEach(({ doc, as, schemas = SCHEMAS }, i) => {
    const [from, type] = schemas[as];
    if (!imports.has(from)) imports.set(from, `B${imports.size}`);
    lines.push('// @ts-expect-error -- deliberately broken: the schema check must reject it');
    lines.push(`export const b${i} = ${JSON.stringify(doc)} satisfies ${imports.get(from)}.${type};`);
  });
  lines.unshift(...[...imports].map(([from, alias]) => `import type * as ${alias} from '${from}';`));
  writeFileSync(join(WORK, 'broken.ts'), `${lines.join('\n')}\n`);
  files.push(join(WORK, 'broken.ts'));

  writeFileSync(
    join(WORK, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'Bundler',
        types: [],
        skipLibCheck: true,
        exactOptionalPropertyTypes: false,
      },
      files: files.map((f) => relative(WORK, f)),
    }),
  );
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(WORK, 'tsconfig.json')], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  if (tsc.status !== 0) fail('schemas', `tsc found documents that do not match their Kubernetes schema:\n${(tsc.stdout + tsc.stderr).slice(0, 6000)}`);
  return broken.length;
}

// ---- facts
const byKind = (docs, kind) => docs.filter((d) => d.kind === kind);
const named = (docs, kind, name) => docs.find((d) => d.kind === kind && d.metadata.name === name);
const svcName = (service) => `${RELEASE}-pipeline-orchestration-${service}`;
const envOf = (container) => Object.fromEntries((container.env ?? []).map((e) => [e.name, e]));

/** Which backend serves a path, by ingress-nginx's rules with use-regex: longest path first, ^path, case-insensitive. */
function ingressRoute(docs, path) {
  const paths = byKind(docs, 'Ingress').flatMap((ing) => ing.spec.rules.flatMap((r) => r.http.paths.map((p) => ({ path: p.path, backend: p.backend.service.name }))));
  paths.sort((a, b) => b.path.length - a.path.length);
  return paths.find((p) => new RegExp(`^${p.path}`, 'i').test(path))?.backend;
}

/** Which backend serves a path through the HTTPRoutes: regex (full match) and longer prefixes before "/". */
function gatewayRoute(docs, path) {
  const matches = byKind(docs, 'HTTPRoute').flatMap((route) =>
    route.spec.rules.flatMap((rule) => rule.matches.map((m) => ({ ...m.path, backend: rule.backendRefs[0].name }))),
  );
  const hit = (m) =>
    m.type === 'RegularExpression'
      ? new RegExp(`^(?:${m.value})$`).test(path)
      : m.type === 'Exact'
        ? path === m.value
        : m.value === '/' || path === m.value || path.startsWith(`${m.value.replace(/\/$/, '')}/`);
  const rank = (m) => (m.type === 'Exact' ? 3e6 : m.type === 'RegularExpression' ? 2e6 : 1e6 + m.value.length);
  return matches.filter(hit).sort((a, b) => rank(b) - rank(a))[0]?.backend;
}

const ROUTES = {
  '/workers/bootstrap': 'worker-gateway',
  '/workers/heartbeat': 'worker-gateway',
  '/workers/events': 'worker-gateway',
  '/workers/shutdown': 'worker-gateway',
  '/workers': 'api-gateway',
  '/workers/5f0c2a9e-0d7b-4c1e-9a53-2a4d1c7e9b10/events': 'api-gateway',
  '/openapi.json': 'api-gateway',
  '/jobs/pull': 'worker-gateway',
  '/jobs/ack': 'worker-gateway',
  '/stages/17/lease/acquire': 'worker-gateway',
  '/stages/17/lease/renew': 'worker-gateway',
  '/stages/17/result': 'worker-gateway',
  // Any id, not only digits: the worker-gateway answers a bad one 401/400 in the spec's check order (decision 0117).
  '/stages/abc/lease/acquire': 'worker-gateway',
  '/stages/abc/result': 'worker-gateway',
  '/stages/17/resume': 'api-gateway',
  '/stages/abc/resume': 'api-gateway',
  '/pipelines/idempotent': 'api-gateway',
  '/pipelines/5/cancel': 'api-gateway',
  '/schedules/nightly/trigger': 'api-gateway',
  '/version': 'api-gateway',
  '/logs': 'api-gateway',
};

function checkFacts(set, values, { docs, text, notes }) {
  const sticky = values.workerRouting?.sticky ?? 'header-hash';
  const ingressOn = values.ingress?.enabled ?? true;
  const gatewayOn = values.gatewayApi?.enabled ?? false;
  const hpaOn = (s) => values.services?.[s]?.autoscaling?.enabled ?? false;

  // No secret values: no Secret objects, no connection URLs, secret env only by reference.
  check(set, byKind(docs, 'Secret').length === 0, 'renders a Secret (the chart must only reference existing ones)');
  // A URL built from parts may appear, its password only as $(VAR), which Kubernetes fills from a Secret.
  for (const [url] of text.matchAll(/\b(postgres(ql)?|rediss?):\/\/[^\s"']*/gi)) {
    const userinfo = /^[a-z]+:\/\/([^/@]*)@/i.exec(url)?.[1] ?? '';
    check(set, !userinfo.includes(':') || /:\$\([A-Z_][A-Z0-9_]*\)$/.test(userinfo), `a connection URL with a password appears in the rendered manifests: ${url.replace(/:[^:@/]*@/, ':…@')}`);
    check(set, values.database?.host || values.redis?.host, `a connection URL appears in the rendered manifests without database.host or redis.host: ${url.replace(/:[^:@/]*@/, ':…@')}`);
  }
  const configMap = named(docs, 'ConfigMap', `${RELEASE}-pipeline-orchestration-config`);
  check(set, configMap, 'no ConfigMap of settings');
  for (const key of ['GATEWAY_VISIBILITY_TIMEOUT', 'GATEWAY_MAX_INFLIGHT', 'WORKER_SESSION_TTL', 'WORKER_EVENTS_MAX_BATCH', 'WORKER_HEARTBEAT_INTERVAL', 'API_MAX_BODY_BYTES', 'CANCEL_TIMEOUT_SECONDS', 'APP_MAX_ACTIVE_STAGES', 'SHUTDOWN_TIMEOUT_MS', 'SCHEDULER_MISFIRE_GRACE_SECONDS', 'DATABASE_POOL_MAX', 'DATABASE_POOL_IDLE_SECONDS', 'DATABASE_STATEMENT_TIMEOUT_MS', 'DATABASE_LOCK_TIMEOUT_MS', 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS']) {
    check(set, typeof configMap?.data?.[key] === 'string' && /^\d+$/.test(configMap.data[key]), `ConfigMap lacks ${key} as a plain integer (got ${configMap?.data?.[key]})`);
  }
  for (const key of Object.keys(configMap?.data ?? {})) check(set, !/URL|PASSWORD|SECRET|TOKEN|CONNECTION_STRING/.test(key), `ConfigMap holds ${key}`);

  for (const service of SERVICES) {
    const name = svcName(service);
    const dep = named(docs, 'Deployment', name);
    if (!dep) {
      fail(set, `no Deployment ${name}`);
      continue;
    }
    const pod = dep.spec.template.spec;
    const c = pod.containers[0];
    const env = envOf(c);
    check(set, JSON.stringify(c.args) === JSON.stringify([service]), `${service}: container args ${JSON.stringify(c.args)}`);
    check(set, c.livenessProbe?.httpGet?.path === '/healthz', `${service}: liveness probe is not GET /healthz`);
    check(set, c.readinessProbe?.httpGet?.path === '/readyz', `${service}: readiness probe is not GET /readyz`);
    check(set, c.startupProbe?.httpGet?.path === '/healthz', `${service}: no startup probe on /healthz`);
    check(set, c.resources?.requests?.cpu && c.resources?.requests?.memory && c.resources?.limits?.memory, `${service}: resources lack cpu/memory requests or a memory limit`);
    check(set, env.HOST?.value === '0.0.0.0', `${service}: HOST is not 0.0.0.0`);
    check(set, env.PORT?.value === String(c.ports[0].containerPort), `${service}: PORT does not match the container port`);
    // REDIS_URL only with the one-URL topology: redis.mjs.
    // Built from parts: extensible.mjs.
    if (!values.database?.host) check(set, env.DATABASE_URL?.valueFrom?.secretKeyRef?.name && env.DATABASE_URL.value === undefined, `${service}: DATABASE_URL is not a secretKeyRef`);
    check(set, c.envFrom?.some((e) => e.configMapRef?.name === configMap?.metadata.name), `${service}: does not read the settings ConfigMap`);
    const sleep = Number(c.lifecycle?.preStop?.exec?.command?.[1]);
    const drain = sleep + Number(configMap?.data?.SHUTDOWN_TIMEOUT_MS) / 1000;
    check(set, sleep > 0, `${service}: no preStop sleep`);
    check(set, pod.terminationGracePeriodSeconds > drain, `${service}: terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} not longer than the drain (${drain} s)`);
    check(set, pod.securityContext?.runAsNonRoot === true && c.securityContext?.allowPrivilegeEscalation === false, `${service}: not locked down (runAsNonRoot, allowPrivilegeEscalation)`);
    const svc = named(docs, 'Service', name);
    check(set, svc && svc.spec.ports[0].targetPort === 'http', `${service}: no Service to port http`);
    check(set, hpaOn(service) ? dep.spec.replicas === undefined && named(docs, 'HorizontalPodAutoscaler', name) : dep.spec.replicas >= 1 && !named(docs, 'HorizontalPodAutoscaler', name), `${service}: replicas/HPA do not match autoscaling.enabled`);
    const pdbWanted = values.services?.[service]?.podDisruptionBudget?.enabled ?? true;
    check(set, Boolean(named(docs, 'PodDisruptionBudget', name)) === pdbWanted, `${service}: PodDisruptionBudget ${pdbWanted ? 'missing' : 'unexpected'}`);
  }

  // Migrations: one hook Job before install and upgrade, with DATABASE_URL by reference only.
  const jobs = byKind(docs, 'Job');
  if (values.migrations?.enabled ?? true) {
    const job = jobs[0];
    const hooks = job?.metadata.annotations?.['helm.sh/hook']?.split(',') ?? [];
    check(set, jobs.length === 1, `expected one migration Job, got ${jobs.length}`);
    check(set, hooks.includes('pre-install') && hooks.includes('pre-upgrade'), 'the migration Job is not a pre-install,pre-upgrade hook');
    check(set, /before-hook-creation/.test(job?.metadata.annotations?.['helm.sh/hook-delete-policy'] ?? ''), 'the migration Job is not replaced on the next release');
    const c = job?.spec.template.spec.containers[0];
    check(set, JSON.stringify(c?.args) === '["migrate","deploy"]', 'the migration Job does not run `migrate deploy`');
    const jobEnv = c ? envOf(c) : {};
    const jobUrl = jobEnv.MIGRATION_DATABASE_URL ?? jobEnv.DATABASE_URL;
    const fromParts = !jobEnv.MIGRATION_DATABASE_URL && values.database?.host; // its password from a Secret: extensible.mjs
    check(set, c && (jobUrl?.valueFrom?.secretKeyRef || fromParts) && same(c.envFrom ?? [], values.envFrom ?? []), 'the migration Job must read its database URL from a Secret and nothing the release creates later (only the envFrom of values)');
    check(set, job?.spec.template.spec.serviceAccountName === undefined, 'the migration Job uses a ServiceAccount created after the hook');
  } else check(set, jobs.length === 0, 'migration Job rendered while migrations.enabled=false');

  // One base URL, and the sticky rule of the chosen mode.
  const ingresses = byKind(docs, 'Ingress');
  const routes = byKind(docs, 'HTTPRoute');
  check(set, ingressOn ? ingresses.length === 2 : ingresses.length === 0, `expected ${ingressOn ? 2 : 0} Ingress objects, got ${ingresses.length}`);
  check(set, gatewayOn ? routes.length === 2 : routes.length === 0, `expected ${gatewayOn ? 2 : 0} HTTPRoutes, got ${routes.length}`);
  for (const [path, service] of Object.entries(ROUTES)) {
    if (ingressOn) check(set, ingressRoute(docs, path) === svcName(service), `Ingress sends ${path} to ${ingressRoute(docs, path)}, not ${service}`);
    if (gatewayOn) check(set, gatewayRoute(docs, path) === svcName(service), `HTTPRoutes send ${path} to ${gatewayRoute(docs, path)}, not ${service}`);
  }
  const workersIngress = named(docs, 'Ingress', `${RELEASE}-pipeline-orchestration-workers`);
  const apiIngress = named(docs, 'Ingress', `${RELEASE}-pipeline-orchestration-api`);
  const a = workersIngress?.metadata.annotations ?? {};
  const hashBy = values.workerRouting?.hashBy ?? '$http_x_worker_session';
  if (ingressOn) {
    check(set, sticky === 'header-hash' ? a['nginx.ingress.kubernetes.io/upstream-hash-by'] === hashBy : a['nginx.ingress.kubernetes.io/upstream-hash-by'] === undefined, `upstream-hash-by is ${a['nginx.ingress.kubernetes.io/upstream-hash-by']} in mode ${sticky}`);
    check(set, sticky === 'cookie' ? a['nginx.ingress.kubernetes.io/affinity'] === 'cookie' && a['nginx.ingress.kubernetes.io/session-cookie-name'] : a['nginx.ingress.kubernetes.io/affinity'] === undefined, `affinity annotations wrong in mode ${sticky}`);
    const apiA = apiIngress?.metadata.annotations ?? {};
    check(set, !apiA['nginx.ingress.kubernetes.io/upstream-hash-by'] && !apiA['nginx.ingress.kubernetes.io/affinity'], 'the api-gateway Ingress carries sticky annotations');
  }
  if (gatewayOn) {
    const wr = named(docs, 'HTTPRoute', `${RELEASE}-pipeline-orchestration-workers`);
    const persistence = wr?.spec.rules[0].sessionPersistence;
    check(set, sticky === 'cookie' ? persistence?.type === 'Cookie' : persistence === undefined, `HTTPRoute sessionPersistence wrong in mode ${sticky}`);
    const policies = byKind(docs, 'BackendTrafficPolicy');
    const header = hashBy.replace(/^\$http_/, '').replaceAll('_', '-');
    check(set, sticky === 'header-hash' ? policies.length === 1 && policies[0].spec.loadBalancer.consistentHash.header.name === header && policies[0].spec.targetRefs[0].name === wr?.metadata.name : policies.length === 0, `BackendTrafficPolicy wrong in mode ${sticky}`);
  }

  // NOTES print the next commands: an application key, the API from a laptop, the CLI, the migration Job.
  const api = svcName('api-gateway');
  const apiPort = values.services?.['api-gateway']?.port ?? 8080;
  check(set, notes.includes(`exec deploy/${api} -- \\\n       node services/api-gateway/dist/admin/cli.js apps create --name demo`), 'NOTES.txt lacks the admin command');
  check(set, notes.includes(`kubectl -n ${NAMESPACE} port-forward svc/${api} 8080:${apiPort}`), 'NOTES.txt lacks the port-forward to the api-gateway Service');
  check(set, notes.includes('curl -s http://127.0.0.1:8080/healthz'), 'NOTES.txt lacks the /healthz call');
  check(set, notes.includes('PO_API_URL=http://127.0.0.1:8080 PO_API_KEY=') && notes.includes('npx po pipelines list'), 'NOTES.txt lacks the po CLI example');
  if (values.migrations?.enabled ?? true) {
    check(set, notes.includes(`logs job/${RELEASE}-pipeline-orchestration-migrate`) && notes.includes(`exec deploy/${api} -- node deploy/docker/entrypoint.mjs migrate status`), 'NOTES.txt lacks the migration Job commands');
  } else check(set, notes.includes('migrations.enabled=false'), 'NOTES.txt does not say migrations are off');
  check(set, notes.includes(`workerRouting.sticky=${sticky}`), 'NOTES.txt does not name the sticky mode');

  checkExposure({ values, docs, notes, release: RELEASE, namespace: NAMESPACE, svcName, check: (ok, msg) => check(set, ok, msg) });
  checkPgbouncer({ values, docs, release: RELEASE, namespace: NAMESPACE, check: (ok, msg) => check(set, ok, msg) });
  redisCovered.push(checkRedis({ values, docs, release: RELEASE, check: (ok, msg) => check(set, ok, msg) }));
  for (const what of checkExtensible({ values, docs, release: RELEASE, check: (ok, msg) => check(set, ok, msg) })) extrasCovered.add(what);
  for (const what of checkWorkerFleet({ values, docs, notes, release: RELEASE, namespace: NAMESPACE, check: (ok, msg) => check(set, ok, msg) })) fleetCovered.add(what);
  return checkBudget({ set, docs, notes, caps: CAPS.caps, valuesText: VALUES_TEXT, readmeText: README_TEXT, check: (ok, msg) => check(set, ok, msg) });
}

// ---- run
rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
const started = Date.now();
console.log(`chart checks: ${execFileSync(HELM, ['version', '--short'], { encoding: 'utf8' }).trim()}, Kubernetes ${KUBE_VERSION} schemas`);

const CAPS = readCaps(ROOT);
for (const problem of CAPS.problems) fail('budget', problem);
const VALUES_TEXT = readFileSync(join(CHART, 'values.yaml'), 'utf8');
const README_TEXT = readFileSync(join(CHART, 'README.md'), 'utf8');
const rendered = {};
const redisCovered = [];
const extrasCovered = new Set();
const fleetCovered = new Set();
for (const [name, values] of Object.entries(VALUE_SETS)) {
  const r = render(name, values);
  if (!r) continue;
  rendered[name] = r;
  const budget = checkFacts(name, values, r);
  const kinds = {};
  for (const d of r.docs) kinds[d.kind] = (kinds[d.kind] ?? 0) + 1;
  console.log(`  ${name.padEnd(24)} lint --strict ok, ${r.docs.length} documents (${Object.entries(kinds).map(([k, n]) => `${n} ${k}`).join(', ')}); PostgreSQL connections ${budget.rollout} in a rollout, ${budget.steady} between`);
}
// The Redis checks cannot pass for want of a value set that exercises them.
for (const [what, seen] of [
  ['one URL', redisCovered.some((r) => r.topology === 'single' && !r.host)],
  ['one node by redis.host', redisCovered.some((r) => r.host)],
  ['Sentinel', redisCovered.some((r) => r.topology === 'sentinel')],
  ['cluster', redisCovered.some((r) => r.topology === 'cluster')],
  ['a CA from a Secret', redisCovered.some((r) => r.ca === 'secret')],
  ['a CA from a ConfigMap', redisCovered.some((r) => r.ca === 'configMap')],
]) {
  check('redis', seen, `no value set renders Redis with ${what} (value-sets.mjs, helm/pipeline-orchestration/examples/)`);
}
// Nor the pod extras' checks: each one, top-level and a service's own, and both database forms in parts.
for (const what of [...POD_EXTRAS, ...POD_EXTRAS.map((k) => `services.*.${k}`), 'database parts with a password Secret', 'database parts without a password']) {
  check('extensible', extrasCovered.has(what), `no value set renders ${what} (value-sets.mjs)`);
}
for (const what of ['ClientIP', 'None', 'keda']) check('worker fleet', fleetCovered.has(what), `no value set renders ${what} (value-sets.mjs)`);
if (rendered.default) check('budget', budgetRefusesOverflow(rendered.default.docs, CAPS.caps), `the budget check accepts a default install past ${LIMIT} connections`);
const kubeRenders = checkKubeVersions({ helm, chart: CHART, release: RELEASE, namespace: NAMESPACE, valuesFile, parse, check });
for (const r of kubeRenders) {
  const apis = [...new Set(r.docs.filter((d) => ['PodDisruptionBudget', 'HorizontalPodAutoscaler'].includes(d.kind)).map((d) => d.apiVersion))];
  console.log(`  ${r.name.padEnd(24)} ${r.discovery ? 'discovery' : 'offline  '} ${r.docs.length} documents, ${apis.join(' + ')}`);
}
if (rendered.default) {
  const broken = typecheck(rendered, kubeRenders);
  const total = Object.values(rendered).reduce((n, r) => n + r.docs.length, 0);
  const old = kubeRenders.filter((r) => r.types === '1.21').reduce((n, r) => n + r.docs.length, 0);
  console.log(`  schemas: ${total} documents typechecked (tsc, kubernetes-types ${KUBE_VERSION}), ${old} of Kubernetes 1.20 against kubernetes-types 1.21; ${broken} broken documents rejected as expected`);
}

// Settings the services read that the chart's config does not carry (they still work through
// services.*.extraEnv): reported, not failed, so a new setting does not break everyone's build.
{
  const chartValues = parseAllDocuments(readFileSync(join(CHART, 'values.yaml'), 'utf8'))[0].toJS();
  // Set per container or from Secrets and volumes, not through config:.
  const notConfig = new Set(['HOST', 'PORT', 'METRICS_PORT', 'DATABASE_URL', 'DATABASE_DIRECT_URL', 'DATABASE_CA_FILE', 'REDIS_URL', 'REDIS_SENTINELS', 'REDIS_SENTINEL_MASTER', 'REDIS_SENTINEL_PASSWORD', 'REDIS_CLUSTER_NODES', 'REDIS_USERNAME', 'REDIS_PASSWORD', 'REDIS_TLS', 'REDIS_TLS_CA_FILE', 'REDIS_COMMAND_TIMEOUT_MS', 'REDIS_MIN_REPLICAS_ACK', 'REDIS_REPLICA_ACK_TIMEOUT_MS', 'WORKER_BROKER_CONNECTION_STRING', 'APP_VERSION', 'GIT_COMMIT', 'BUILT_AT']);
  const sources = [join(ROOT, 'libs', 'config', 'src', 'common.ts'), ...SERVICES.map((s) => join(ROOT, 'services', s, 'src', 'config.ts'))];
  const read = new Set(sources.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/\.(?:int|str|bool|url|oneOf|file)\('([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1])));
  const settings = [...read].filter((name) => !notConfig.has(name));
  // A setting left to the service's default is carried when the schema types it (config: may set it).
  const typed = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')).properties.config.properties;
  const missing = settings.filter((name) => !(name in chartValues.config) && !(name in typed));
  console.log(missing.length ? `  WARNING: settings read by the services but not in the chart's config: ${missing.join(', ')} (add them to values.yaml and values.schema.json)` : `  config: all ${settings.length} settings the services read are in the chart's values`);
}

let shown = false;
for (const [what, [values, reason]] of Object.entries(BAD_VALUES)) {
  const out = helm(['template', RELEASE, CHART, '-n', NAMESPACE, '--kube-version', KUBE_VERSION, '-f', valuesFile(`bad-${what}`, values)]);
  if (out.status === 0) fail('bad values', `${what}: helm template accepted it`);
  else if (!reason.test(out.stderr)) fail('bad values', `${what}: refused, but not for the expected reason:\n${out.stderr}`);
  else if (!shown) {
    shown = true;
    console.log(`  bad values are refused, e.g. ${JSON.stringify(values)}:\n    ${out.stderr.trim().split('\n').join('\n    ')}`);
  }
}
console.log(`  bad values: ${Object.keys(BAD_VALUES).length} refused by helm template`);

if (failures.length) {
  console.error(`\nchart checks FAILED (${failures.length}):\n  - ${failures.join('\n  - ')}`);
  process.exit(1);
}
console.log(`chart checks: OK (${Object.keys(VALUE_SETS).length} value sets, ${((Date.now() - started) / 1000).toFixed(1)} s)`);
