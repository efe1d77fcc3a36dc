// The chart's PgBouncer on the real API server (test.mjs; decision 0114): the "pgbouncer" value set
// installed, not only dry-run. What the API server, its controllers and the fake node do with it:
// the PgBouncer Deployment becomes Available beside the five services, its Service gets both pods
// as endpoints, the PodDisruptionBudget (policy/v1beta1 on 1.20) counts them, every object is
// stored as rendered, the pods read both URLs from their Secrets, and a PgBouncer setting rolls
// PgBouncer alone. A fake node runs no container: whether PgBouncer accepts the configuration is
// deploy/k8s-checks' part (the init script) and decision 0114's (PgBouncer itself, by hand).
import { VALUE_SETS } from '../k8s-checks/value-sets.mjs';
import {
  checkAvailable,
  checkNothingLeft,
  helmUninstall,
  createNamespace,
  FULL,
  parseManifest,
  RELEASE,
  SECRETS,
} from './release.mjs';
import { check, sameJson, step, waitFor } from './tools.mjs';

const NAME = `${FULL}-pgbouncer`;
const DIRECT = Object.keys(SECRETS).find((s) => 'DATABASE_DIRECT_URL' in SECRETS[s]);

export async function pgbouncerVariant({ kube, helm, kubectl, chart, valuesFile }) {
  const namespace = 'po-pgb';
  const values = VALUE_SETS.pgbouncer;
  step(`PgBouncer variant: helm install --wait with values "pgbouncer" (namespace ${namespace})`);
  check(
    values.database.directUrlSecret.name === DIRECT,
    `the "pgbouncer" value set names the direct URL Secret the test makes (${DIRECT})`,
  );
  await createNamespace(kube, namespace);
  helm([
    'install',
    RELEASE,
    chart,
    '-n',
    namespace,
    '-f',
    valuesFile('pgbouncer', values),
    '--wait',
    '--timeout',
    '3m',
  ]);
  await checkAvailable(kube, namespace);
  const apps = `/apis/apps/v1/namespaces/${namespace}/deployments`;
  const deployment = await kube.get(`${apps}/${NAME}`);
  check(
    deployment.status.availableReplicas === 2 &&
      deployment.status.conditions.some((c) => c.type === 'Available' && c.status === 'True'),
    `PgBouncer: Available, ${deployment.status.availableReplicas}/2 pods ready`,
  );

  const rendered = parseManifest(helm(['get', 'manifest', RELEASE, '-n', namespace]).stdout).filter(
    (d) => d.metadata.labels?.['app.kubernetes.io/component'] === 'pgbouncer',
  );
  const paths = {
    ConfigMap: `/api/v1/namespaces/${namespace}/configmaps`,
    Service: `/api/v1/namespaces/${namespace}/services`,
    Deployment: apps,
  };
  for (const doc of rendered.filter((d) => paths[d.kind])) {
    const stored = await kube.get(`${paths[doc.kind]}/${doc.metadata.name}`);
    const part = doc.kind === 'ConfigMap' ? 'data' : 'spec';
    const fields =
      doc.kind === 'Deployment'
        ? ['selector', 'replicas']
        : doc.kind === 'Service'
          ? ['selector']
          : null;
    const same = fields
      ? fields.every((f) => sameJson(stored.spec[f], doc.spec[f]))
      : sameJson(stored[part], doc[part]);
    check(
      same,
      `${doc.kind} ${doc.metadata.name} stored as rendered (${fields ? fields.join(', ') : part})`,
    );
  }
  const pdbs = rendered.filter((d) => d.kind === 'PodDisruptionBudget');
  check(
    pdbs.length === 1 && pdbs[0].apiVersion === 'policy/v1beta1',
    `its PodDisruptionBudget is ${pdbs[0]?.apiVersion}, the version the 1.20 API server serves`,
  );
  const pdb = await waitFor(async () => {
    const p = await kube.get(
      `/apis/policy/v1beta1/namespaces/${namespace}/poddisruptionbudgets/${NAME}`,
    );
    return p.status?.expectedPods === 2 && p.status.currentHealthy === 2 ? p : null;
  });
  check(
    pdb,
    `the disruption controller counts both PgBouncer pods (expected ${pdb?.status.expectedPods}, healthy ${pdb?.status.currentHealthy}, ${pdb?.status.disruptionsAllowed} disruption allowed)`,
  );
  const endpoints = await waitFor(async () => {
    const e = await kube.get(`/api/v1/namespaces/${namespace}/endpoints/${NAME}`, { allow: [404] });
    const ready = (e?.subsets ?? []).flatMap((s) =>
      (s.addresses ?? []).map((a) => ({ ip: a.ip, port: s.ports?.[0]?.port })),
    );
    return ready.length === 2 ? ready : null;
  });
  check(
    endpoints?.every((a) => a.port === 6432),
    `its Service routes to both pods' PgBouncer port (${endpoints?.map((a) => `${a.ip}:${a.port}`).join(', ')})`,
  );

  const pods = (
    await kube.get(
      `/api/v1/namespaces/${namespace}/pods?labelSelector=app.kubernetes.io/component%3Dpgbouncer`,
    )
  ).items;
  const secretOf = (container, name) =>
    container.env?.find((e) => e.name === name)?.valueFrom?.secretKeyRef?.name;
  check(
    pods.length === 2 &&
      pods.every(
        (p) =>
          secretOf(p.spec.initContainers[0], 'DATABASE_URL') === 'pipeline-orchestration-db' &&
          secretOf(p.spec.initContainers[0], 'DATABASE_DIRECT_URL') === DIRECT &&
          !p.spec.containers[0].env,
      ),
    'its pods: the init container reads both URLs from their Secrets, PgBouncer itself has no environment',
  );
  const gateway = (await kube.get(`${apps}/${FULL}-api-gateway`)).spec.template.spec.containers[0];
  check(
    secretOf(gateway, 'DATABASE_DIRECT_URL') === DIRECT,
    `the services read DATABASE_DIRECT_URL from ${DIRECT}`,
  );

  step('PgBouncer variant: helm upgrade --wait with pgbouncer.poolSize 20→10');
  const before = Object.fromEntries(
    (await kube.get(apps)).items.map((d) => [d.metadata.name, d.metadata.generation]),
  );
  helm([
    'upgrade',
    RELEASE,
    chart,
    '-n',
    namespace,
    '-f',
    valuesFile('pgbouncer-pool', { ...values, pgbouncer: { ...values.pgbouncer, poolSize: 10 } }),
    '--wait',
    '--timeout',
    '3m',
  ]);
  await checkAvailable(kube, namespace);
  const after = (await kube.get(apps)).items;
  const rolled = after
    .filter((d) => d.metadata.generation !== before[d.metadata.name])
    .map((d) => d.metadata.name);
  check(
    sameJson(rolled, [NAME]),
    `only PgBouncer rolled (its ConfigMap's checksum), the services kept their pods: ${rolled.join(', ')}`,
  );
  const ini = (await kube.get(`/api/v1/namespaces/${namespace}/configmaps/${NAME}`)).data[
    'pgbouncer.ini'
  ];
  check(
    /^default_pool_size = 10$/m.test(ini) && /^max_db_connections = 10$/m.test(ini),
    'the stored pgbouncer.ini has the new pool size',
  );

  step('PgBouncer variant: helm uninstall --wait');
  helmUninstall(helm, namespace);
  await checkNothingLeft(kubectl, namespace);
}
