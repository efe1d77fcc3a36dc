// The direct URL, the migration Job's settings and the chart's PgBouncer (check-chart.mjs; decision
// 0114): which pods get DATABASE_DIRECT_URL, that PgBouncer runs in transaction mode with no
// password outside a memory volume, that only the release's services reach it, and that the
// script its init container runs (shipped in its ConfigMap) builds the backend from the two URLs
// and refuses the wrong ones without printing them.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admits } from './exposure.mjs';
import { SERVICES } from './value-sets.mjs';


/** Values pgbouncer and the direct URL must refuse, and why (merged into check-chart's BAD_VALUES). */
export const PGBOUNCER_BAD_VALUES = {
  'PgBouncer without the direct URL (chart check)': [
    { pgbouncer: { enabled: true } },
    /directUrlSecret/,
  ],
  'PgBouncer with a CA for the services (chart check)': [
    {
      pgbouncer: { enabled: true },
      database: {
        directUrlSecret: { name: 'd', key: 'k' },
        caCert: { secretName: 'ca', key: 'ca.crt' },
      },
    },
    /caCert/,
  ],
  'PgBouncer client connections below the pools (chart check)': [
    {
      pgbouncer: { enabled: true, maxClientConnections: 50 },
      database: { directUrlSecret: { name: 'd', key: 'k' } },
    },
    /maxClientConnections/,
  ],
  'PgBouncer query_timeout not past statement_timeout (chart check)': [
    {
      pgbouncer: { enabled: true, queryTimeoutSeconds: 30 },
      database: { directUrlSecret: { name: 'd', key: 'k' } },
    },
    /queryTimeoutSeconds/,
  ],
  'a PgBouncer setting the chart does not have (schema additionalProperties)': [
    { pgbouncer: { enabled: true, pool_mode: 'session' } },
    /pool_mode/,
  ],
  'a pool of 0 (schema minimum)': [
    { services: { 'api-gateway': { databasePoolMax: 0 } } },
    /databasePoolMax/,
  ],
  'a negative statement timeout (schema minimum)': [
    { config: { DATABASE_STATEMENT_TIMEOUT_MS: -1 } },
    /DATABASE_STATEMENT_TIMEOUT_MS/,
  ],
};

const byKind = (docs, kind) => docs.filter((d) => d.kind === kind);
const component = (d) => d.metadata?.labels?.['app.kubernetes.io/component'];
const envOf = (container) => Object.fromEntries((container?.env ?? []).map((e) => [e.name, e]));
const fromSecret = (e, name, key) =>
  e?.valueFrom?.secretKeyRef?.name === name &&
  e.valueFrom.secretKeyRef.key === key &&
  e.value === undefined;

/** Runs the init container's script on two URLs; returns { status, out, files }. */
function runBackendScript(script, env) {
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-backend-'));
  try {
    const file = join(dir, 'script.mjs');
    writeFileSync(file, script);
    const run = spawnSync(process.execPath, [file], {
      env: { PATH: process.env.PATH, PGBOUNCER_BACKEND_DIR: dir, ...env },
      encoding: 'utf8',
    });
    const read = (f) => {
      try {
        return readFileSync(join(dir, f), 'utf8');
      } catch {
        return null;
      }
    };
    return {
      status: run.status,
      out: `${run.stdout}${run.stderr}`,
      files: {
        userlist: read('userlist.txt'),
        server: read('server.ini'),
        databases: read('databases.ini'),
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function checkBackendScript(script, { service, namespace, port }, check) {
  const base = {
    PGBOUNCER_SERVICE: service,
    PGBOUNCER_NAMESPACE: namespace,
    PGBOUNCER_PORT: String(port),
  };
  const secret = 'pa"ss:w@rd';
  const client = `postgresql://po:${encodeURIComponent(secret)}@${service}:${port}/po?pgbouncer=true`;
  const direct = `postgresql://po:${encodeURIComponent(secret)}@db.example.internal:6543/pipelines?sslmode=verify-full`;
  const good = runBackendScript(script, {
    ...base,
    DATABASE_URL: client,
    DATABASE_DIRECT_URL: direct,
  });
  check(good.status === 0, `the PgBouncer init script refuses good URLs: ${good.out}`);
  check(
    good.files.databases === 'po = host=db.example.internal port=6543 dbname=pipelines user=po\n',
    `the init script's databases.ini is ${JSON.stringify(good.files.databases)}`,
  );
  check(
    good.files.server ===
      'server_tls_sslmode = verify-full\nserver_tls_ca_file = /etc/ssl/certs/ca-certificates.crt\n',
    `the init script's server.ini is ${JSON.stringify(good.files.server)}`,
  );
  check(
    good.files.userlist === '"po" "pa""ss:w@rd"\n',
    "the init script's userlist.txt does not hold the services' user and decoded password, quoted",
  );
  check(
    !/\[[a-z]+\]/.test(`${good.files.server}${good.files.databases}`),
    'an included file opens a section: a second [pgbouncer] resets every setting before it',
  );
  check(
    !good.out.includes(secret) && !good.out.includes(encodeURIComponent(secret)),
    'the init script prints a password',
  );
  const refused = {
    'no pgbouncer=true': [
      { DATABASE_URL: client.replace('?pgbouncer=true', '') },
      /pgbouncer=true/,
    ],
    'another host': [
      { DATABASE_URL: client.replace(`@${service}:`, '@db.example.internal:') },
      /must name the PgBouncer Service/,
    ],
    'TLS to PgBouncer': [{ DATABASE_URL: `${client}&sslmode=require` }, /no TLS/],
    'one user, two passwords': [
      { DATABASE_DIRECT_URL: direct.replace(encodeURIComponent(secret), 'other') },
      /different passwords/,
    ],
    'no direct URL': [{ DATABASE_DIRECT_URL: '' }, /DATABASE_DIRECT_URL .* not a URL/],
  };
  for (const [what, [env, reason]] of Object.entries(refused)) {
    const run = runBackendScript(script, {
      ...base,
      DATABASE_URL: client,
      DATABASE_DIRECT_URL: direct,
      ...env,
    });
    check(
      run.status === 1 && reason.test(run.out),
      `the PgBouncer init script does not refuse ${what} as expected (exit ${run.status}): ${run.out.trim()}`,
    );
    check(
      !run.out.includes(secret) && !run.out.includes(encodeURIComponent(secret)),
      `the init script prints a password when it refuses ${what}`,
    );
  }
}

/** Checks the direct URL and PgBouncer facts of one render. */
export function checkPgbouncer({ values, docs, release, namespace, check }) {
  const direct = values.database?.directUrlSecret?.name ? values.database.directUrlSecret : null;
  const directKey = direct?.key ?? 'DATABASE_DIRECT_URL';
  const on = values.pgbouncer?.enabled ?? false;

  // DATABASE_DIRECT_URL: every service pod when set, the migration Job unless it has its own URL.
  for (const d of byKind(docs, 'Deployment').filter((d) => SERVICES.includes(component(d)))) {
    const env = envOf(d.spec.template.spec.containers[0]);
    check(
      direct
        ? fromSecret(env.DATABASE_DIRECT_URL, direct.name, directKey)
        : !env.DATABASE_DIRECT_URL,
      `${component(d)}: DATABASE_DIRECT_URL ${direct ? 'not from database.directUrlSecret' : 'without database.directUrlSecret'}`,
    );
    check(
      /^\d+$/.test(env.DATABASE_POOL_MAX?.value ?? ''),
      `${component(d)}: no DATABASE_POOL_MAX of its own`,
    );
  }
  const job = byKind(docs, 'Job').find((j) => component(j) === 'migrate');
  if (job) {
    const env = envOf(job.spec.template.spec.containers[0]);
    const own = values.migrations?.urlSecret?.name;
    check(
      direct && !own
        ? fromSecret(env.DATABASE_DIRECT_URL, direct.name, directKey)
        : !env.DATABASE_DIRECT_URL,
      "the migration Job's DATABASE_DIRECT_URL does not follow database.directUrlSecret (and never comes with its own MIGRATION_DATABASE_URL)",
    );
    check(
      env.MIGRATION_LOCK_TIMEOUT_MS?.value === String(values.migrations?.lockTimeoutMs ?? 5000),
      `the migration Job's MIGRATION_LOCK_TIMEOUT_MS is ${env.MIGRATION_LOCK_TIMEOUT_MS?.value}`,
    );
  }

  const objects = docs.filter((d) => component(d) === 'pgbouncer');
  if (!on)
    return check(
      objects.length === 0,
      `PgBouncer objects rendered with pgbouncer.enabled off: ${objects.map((o) => o.kind).join(', ')}`,
    );
  const name = `${release}-pipeline-orchestration-pgbouncer`;
  const find = (kind) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  const [deployment, service, configMap] = [find('Deployment'), find('Service'), find('ConfigMap')];
  if (!deployment || !service || !configMap)
    return check(false, 'pgbouncer.enabled: no PgBouncer Deployment, Service and ConfigMap');
  const pod = deployment.spec.template.spec;
  const init = pod.initContainers?.find((c) => c.name === 'backend');
  const bouncer = pod.containers.find((c) => c.name === 'pgbouncer');
  const servicePort = values.pgbouncer?.port ?? 5432;
  const podPort = bouncer?.ports?.find((p) => p.name === 'postgres')?.containerPort;
  const initEnv = envOf(init);
  check(
    fromSecret(
      initEnv.DATABASE_URL,
      values.database?.urlSecret?.name ?? 'pipeline-orchestration-db',
      values.database?.urlSecret?.key ?? 'DATABASE_URL',
    ) && fromSecret(initEnv.DATABASE_DIRECT_URL, direct?.name, directKey),
    "PgBouncer's init container does not read both URLs from their Secrets",
  );
  check(
    initEnv.PGBOUNCER_SERVICE?.value === service.metadata.name &&
      initEnv.PGBOUNCER_PORT?.value === String(servicePort) &&
      initEnv.PGBOUNCER_NAMESPACE?.value === namespace,
    "the init container checks the services' URL against another Service, port or namespace",
  );
  check(
    !(bouncer?.env ?? []).some((e) => e.valueFrom?.secretKeyRef) && !bouncer?.envFrom,
    'the PgBouncer container gets a Secret in its environment (passwords belong in the memory volume only)',
  );
  const memory = pod.volumes.find((v) => v.name === 'backend');
  check(
    memory?.emptyDir?.medium === 'Memory' &&
      bouncer?.volumeMounts?.find((m) => m.name === 'backend')?.readOnly === true,
    "PgBouncer's credentials volume is not a read-only, memory-backed emptyDir",
  );
  check(
    JSON.stringify(bouncer?.command) === '["pgbouncer","/etc/pgbouncer/pgbouncer.ini"]',
    `PgBouncer runs ${JSON.stringify(bouncer?.command)}`,
  );
  check(
    bouncer?.lifecycle?.preStop?.exec?.command?.join(' ').includes('kill -INT 1'),
    'PgBouncer does not stop with SIGINT (let transactions finish) after leaving the endpoints',
  );
  check(
    pod.securityContext?.runAsNonRoot === true &&
      bouncer?.securityContext?.readOnlyRootFilesystem === true &&
      init?.securityContext?.allowPrivilegeEscalation === false,
    "PgBouncer's pod is not locked down",
  );
  check(
    service.spec.ports[0].port === servicePort && service.spec.ports[0].targetPort === 'postgres',
    "the PgBouncer Service does not map pgbouncer.port to the pod's port",
  );
  check(
    deployment.spec.template.metadata.annotations?.['checksum/config'],
    "PgBouncer's pods do not roll when its ConfigMap changes",
  );
  const pdbWanted = values.pgbouncer?.podDisruptionBudget?.enabled ?? true;
  check(
    Boolean(find('PodDisruptionBudget')) === pdbWanted,
    `PgBouncer PodDisruptionBudget ${pdbWanted ? 'missing' : 'unexpected'}`,
  );

  const ini = configMap.data['pgbouncer.ini'];
  const setting = (key) => ini.match(new RegExp(`^${key} = (.*)$`, 'm'))?.[1];
  check(
    setting('pool_mode') === 'transaction' && setting('auth_type') === 'scram-sha-256',
    'pgbouncer.ini: not transaction pooling with scram-sha-256',
  );
  check(
    Number(setting('listen_port')) === podPort,
    "pgbouncer.ini listens on another port than the container's",
  );
  check(
    /^%include \/etc\/pgbouncer-backend\/server\.ini\n\[databases\]\n%include \/etc\/pgbouncer-backend\/databases\.ini\n?$/m.test(
      ini,
    ),
    "pgbouncer.ini does not include the init container's server.ini in [pgbouncer] and databases.ini under [databases]",
  );
  check(
    !/^[^;\n]*password\s*=/im.test(ini) && !/^[^;\n]*auth_query/im.test(ini),
    'pgbouncer.ini holds a password or an auth query',
  );
  checkBackendScript(
    configMap.data['pgbouncer-backend.mjs'],
    { service: service.metadata.name, namespace, port: servicePort },
    check,
  );

  // NetworkPolicy: the five services reach PgBouncer, nothing else does.
  if (values.networkPolicy?.enabled) {
    check(find('NetworkPolicy'), 'networkPolicy.enabled: no NetworkPolicy for PgBouncer');
    const target = {
      'app.kubernetes.io/name': 'pipeline-orchestration',
      'app.kubernetes.io/instance': release,
      'app.kubernetes.io/component': 'pgbouncer',
    };
    const from = (labels, ns = namespace) => ({
      namespace: ns,
      namespaceLabels: { 'kubernetes.io/metadata.name': ns },
      labels,
    });
    for (const s of SERVICES) {
      check(
        admits(
          docs,
          namespace,
          target,
          podPort,
          from({
            'app.kubernetes.io/name': 'pipeline-orchestration',
            'app.kubernetes.io/instance': release,
            'app.kubernetes.io/component': s,
          }),
        ),
        `${s} cannot reach PgBouncer through the NetworkPolicy`,
      );
    }
    check(
      !admits(docs, namespace, target, podPort, from({ app: 'curious' })),
      'another pod of the namespace reaches PgBouncer',
    );
    check(
      !admits(
        docs,
        namespace,
        target,
        podPort,
        from({
          'app.kubernetes.io/name': 'pipeline-orchestration',
          'app.kubernetes.io/instance': 'other',
          'app.kubernetes.io/component': 'api-gateway',
        }),
      ),
      "another release's api-gateway reaches PgBouncer",
    );
  } else check(!find('NetworkPolicy'), 'a PgBouncer NetworkPolicy without networkPolicy.enabled');
}
