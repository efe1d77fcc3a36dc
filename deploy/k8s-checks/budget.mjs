// The PostgreSQL connection budget of a render (check-chart.mjs; decision 0114): counted from what
// the rendered Deployments, autoscalers, ConfigMaps and migration Job say, with each service's cap
// on its pool read from the service's own source, so that neither a default in values.yaml, nor
// the chart, nor a service's pool sizing can push the default install past what a default
// PostgreSQL gives an ordinary role without this check failing. It also holds the NOTES and the
// chart README to the same numbers.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVICES } from './value-sets.mjs';

/** max_connections 100 of a default PostgreSQL, less its superuser_reserved_connections 3. */
export const LIMIT = 97;
/** The value sets whose budget is "the default install": without and with the chart's PgBouncer. */
export const DEFAULT_SETS = ['default', 'pgbouncer'];
/** The migration Job: the create-database check, then the schema engine's connection. */
const MIGRATION_JOB = 2;
/** The one LISTEN session of each gateway pod, always on the server (DATABASE_DIRECT_URL or DATABASE_URL). */
const SESSIONS = { 'api-gateway': 1, 'worker-gateway': 1 };

const byKind = (docs, kind) => docs.filter((d) => d.kind === kind);
const component = (d) => d.metadata?.labels?.['app.kubernetes.io/component'];

/**
 * Each service's cap on its pool, (settings) => connections, from its src/main.ts: the check
 * fails, naming the file, when a formula no longer reads the way the chart's po.dbBudget assumes.
 */
export function readCaps(root) {
  const problems = [];
  const source = (service, file = 'main.ts') =>
    readFileSync(join(root, 'services', service, 'src', file), 'utf8');
  const find = (service, text, re) => {
    const m = text.match(re);
    if (!m)
      problems.push(
        `services/${service}: its pool size no longer matches ${re}; update deploy/k8s-checks/budget.mjs and po.dbBudget in templates/_database.tpl`,
      );
    return m ? m.slice(1).map(Number) : [NaN, NaN];
  };
  for (const s of ['api-gateway', 'worker-gateway'])
    find(s, source(s), /max:\s*config\.databasePoolMax\b/);
  const pipeline = source('pipeline-service');
  const [batches] = find('pipeline-service', pipeline, /const BATCH_CONCURRENCY = (\d+);/);
  const [pipelineExtra] = find(
    'pipeline-service',
    pipeline,
    /max:\s*Math\.min\(config\.databasePoolMax,\s*BATCH_CONCURRENCY \+ (\d+)\)/,
  );
  const [resultExtra] = find(
    'result-consumer',
    source('result-consumer'),
    /max:\s*Math\.min\(config\.databasePoolMax,\s*config\.batchConcurrency \+ (\d+)\)/,
  );
  const [aheadExtra, schedulerExtra] = find(
    'scheduler-service',
    source('scheduler-service'),
    /max:\s*Math\.min\(\s*config\.databasePoolMax,\s*\(AHEAD_WAITING_PER_WORKER \+ (\d+)\) \* config\.concurrency \+ (\d+)\s*\)/,
  );
  const [aheadWaiting] = find(
    'scheduler-service',
    source('scheduler-service', 'scheduler/pass.ts'),
    /export const AHEAD_WAITING_PER_WORKER = (\d+);/,
  );
  const caps = {
    'api-gateway': () => Infinity,
    'worker-gateway': () => Infinity,
    'pipeline-service': () => batches + pipelineExtra,
    'result-consumer': (cfg) => Number(cfg.RESULT_CONSUMER_BATCH_CONCURRENCY) + resultExtra,
    'scheduler-service': (cfg) =>
      (aheadWaiting + aheadExtra) * Number(cfg.SCHEDULER_CONCURRENCY) + schedulerExtra,
  };
  return { caps, problems };
}

/** Pods a Deployment adds while it rolls (spec.strategy.rollingUpdate.maxSurge, default 25%). */
function surge(deployment, replicas) {
  const value = deployment.spec.strategy?.rollingUpdate?.maxSurge ?? '25%';
  return typeof value === 'number'
    ? value
    : Math.ceil((replicas * Number.parseInt(value, 10)) / 100);
}

/** Pods of a Deployment at most (its autoscaler's maximum), and during a rollout. */
function podsOf(docs, deployment) {
  const hpa = byKind(docs, 'HorizontalPodAutoscaler').find(
    (h) => h.spec.scaleTargetRef.name === deployment.metadata.name,
  );
  const pods = hpa ? hpa.spec.maxReplicas : (deployment.spec.replicas ?? 1);
  return { pods, rolling: pods === 0 ? 0 : pods + surge(deployment, pods) };
}

/** pgbouncer.ini's `key = value` settings. */
const iniSettings = (text) =>
  Object.fromEntries(
    [...(text ?? '').matchAll(/^([a-z_]+)\s*=\s*(.*)$/gm)].map((m) => [m[1], m[2].trim()]),
  );

/** The budget of one render: { rollout, steady, clients, maxClientConn, rows }. */
export function computeBudget(docs, caps) {
  const settings =
    byKind(docs, 'ConfigMap').find((c) => c.metadata.name.endsWith('-config'))?.data ?? {};
  const pgbDeployment = byKind(docs, 'Deployment').find((d) => component(d) === 'pgbouncer');
  const rows = [];
  let rollout = 0;
  let steady = 0;
  let clients = 0;
  for (const service of SERVICES) {
    const deployment = byKind(docs, 'Deployment').find((d) => component(d) === service);
    if (!deployment) continue;
    const env = Object.fromEntries(
      (deployment.spec.template.spec.containers[0].env ?? []).map((e) => [e.name, e.value]),
    );
    const pool = Number(env.DATABASE_POOL_MAX ?? settings.DATABASE_POOL_MAX);
    const uses = Math.min(pool, caps[service](settings));
    const session = SESSIONS[service] ?? 0;
    const { pods, rolling } = podsOf(docs, deployment);
    rows.push({ service, pods: rolling, pool: uses, session });
    if (pgbDeployment) {
      rollout += rolling * session;
      steady += pods * session;
      clients += rolling * uses;
    } else {
      rollout += rolling * (uses + session);
      steady += pods * (uses + session);
    }
  }
  let maxClientConn = null;
  if (pgbDeployment) {
    const ini = iniSettings(
      byKind(docs, 'ConfigMap').find((c) => component(c) === 'pgbouncer')?.data?.['pgbouncer.ini'],
    );
    const server = Number(ini.max_db_connections || ini.default_pool_size);
    const { pods, rolling } = podsOf(docs, pgbDeployment);
    rows.push({ service: 'pgbouncer', pods: rolling, pool: server, session: 0 });
    rollout += rolling * server;
    steady += pods * server;
    maxClientConn = Number(ini.max_client_conn);
  }
  if (byKind(docs, 'Job').some((j) => component(j) === 'migrate')) rollout += MIGRATION_JOB;
  return { rollout, steady, clients, maxClientConn, rows };
}

/** The numbers the chart README states: values.yaml's description (generated into it) and its prerequisites. */
function documented(valuesText, readmeText) {
  const direct = valuesText.match(
    /\*\*default install\*\*[ |]*\*\*(\d+)\*\* \((\d+) between rollouts\)/,
  );
  const prerequisite = readmeText.match(
    /the release opens up to (\d+) PostgreSQL connections during a rollout/,
  );
  const pooled = valuesText.match(/by default [^=]+= (\d+),/);
  return {
    default: direct &&
      prerequisite && {
        rollout: Number(direct[1]),
        steady: Number(direct[2]),
        prerequisite: Number(prerequisite[1]),
      },
    pgbouncer: pooled && { rollout: Number(pooled[1]) },
  };
}

/** Checks one render's budget; returns it for the summary line. */
export function checkBudget({ set, docs, notes, caps, valuesText, readmeText, check }) {
  const b = computeBudget(docs, caps);
  check(
    notes.includes(`opens at most ${b.rollout} during a rollout and ${b.steady} between`),
    `NOTES.txt does not state the budget the manifests give (${b.rollout} during a rollout, ${b.steady} between): po.dbBudget and deploy/k8s-checks/budget.mjs disagree`,
  );
  if (b.maxClientConn !== null)
    check(
      b.clients <= b.maxClientConn,
      `the services' pools may open ${b.clients} connections to one PgBouncer pod, above its max_client_conn ${b.maxClientConn}`,
    );
  if (DEFAULT_SETS.includes(set)) {
    const table = b.rows.map((r) => `${r.service} ${r.pods} × ${r.pool + r.session}`).join(', ');
    check(
      b.rollout <= LIMIT,
      `the default install opens up to ${b.rollout} PostgreSQL connections during a rollout (${table}, + the migration Job), above ${LIMIT} (a default PostgreSQL's max_connections 100 less 3 for superusers): lower a default pool or replica count`,
    );
    const doc = documented(valuesText, readmeText)[set];
    const agrees =
      doc &&
      doc.rollout === b.rollout &&
      (doc.prerequisite ?? b.rollout) === b.rollout &&
      (doc.steady ?? b.steady) === b.steady;
    check(
      agrees,
      `the chart README (values.yaml's "PostgreSQL connections and PgBouncer", its prerequisites) states ${JSON.stringify(doc)} for the ${set} install, the manifests give ${b.rollout} (${b.steady} between rollouts)`,
    );
  }
  return b;
}

/** The check must refuse a default install past the limit: one more api-gateway replica pool, say. */
export function budgetRefusesOverflow(docs, caps) {
  const copy = structuredClone(docs);
  const api = copy.find((d) => d.kind === 'Deployment' && component(d) === 'api-gateway');
  api.spec.replicas += 4;
  return computeBudget(copy, caps).rollout > LIMIT;
}
