// The release the real-cluster test installs (test.mjs, lifecycle.mjs): its names, the Secrets the
// test makes for it, and checks of what the API server holds for it.
import { parseAllDocuments } from 'yaml';
import { check, info, waitFor } from './tools.mjs';

export const RELEASE = 'po';
export const SERVICES = [
  'api-gateway',
  'worker-gateway',
  'pipeline-service',
  'scheduler-service',
  'result-consumer',
];
export const FULL = `${RELEASE}-pipeline-orchestration`;
export const deploymentName = (service) => `${FULL}-${service}`;
/** What the test puts in the Secrets: URLs of hosts that do not exist (nothing connects on a fake node). */
export const SECRETS = {
  'pipeline-orchestration-db': {
    DATABASE_URL: 'postgresql://po:not-a-real-password@postgres.invalid:5432/po',
  },
  'pipeline-orchestration-redis': { REDIS_URL: 'redis://redis.invalid:6379' },
  // The server's own URL (database.directUrlSecret), for the PgBouncer variant (pgbouncer.mjs).
  'pipeline-orchestration-db-direct': {
    DATABASE_DIRECT_URL: 'postgresql://po:not-a-real-password@postgres.invalid:5432/po',
  },
};

export async function createNamespace(kube, namespace, { secrets = true } = {}) {
  await kube.post('/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: namespace },
  });
  // The namespace controller makes its default ServiceAccount; helm's pods need nothing else of it.
  await waitFor(() =>
    kube
      .get(`/api/v1/namespaces/${namespace}/serviceaccounts/default`, { allow: [404] })
      .then((sa) => sa?.metadata),
  );
  if (!secrets) return;
  for (const [name, stringData] of Object.entries(SECRETS)) {
    await kube.post(`/api/v1/namespaces/${namespace}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name },
      type: 'Opaque',
      stringData,
    });
  }
}

async function deployments(kube, namespace) {
  const list = await kube.get(
    `/apis/apps/v1/namespaces/${namespace}/deployments?labelSelector=app.kubernetes.io/instance%3D${RELEASE}`,
  );
  return Object.fromEntries(
    list.items.map((d) => [d.metadata.labels['app.kubernetes.io/component'], d]),
  );
}

/** Every Deployment Available, rolled out to its current generation, all replicas ready. */
export async function checkAvailable(kube, namespace, expectReplicas = {}) {
  const deps = await deployments(kube, namespace);
  check(
    SERVICES.every((s) => deps[s]),
    `all five Deployments exist (${SERVICES.filter((s) => deps[s])
      .sort()
      .join(', ')})`,
  );
  for (const service of SERVICES) {
    const d = deps[service];
    const want = expectReplicas[service] ?? 2;
    const available = d.status.conditions?.find((c) => c.type === 'Available')?.status === 'True';
    check(
      available &&
        d.spec.replicas === want &&
        d.status.availableReplicas === want &&
        d.status.updatedReplicas === want &&
        d.status.observedGeneration === d.metadata.generation,
      `${service}: Available, ${d.status.availableReplicas}/${want} replicas of generation ${d.metadata.generation} ready`,
    );
  }
  return deps;
}

/** Namespaced objects left in `namespace`, apart from Events (listed kind by kind through discovery). */
export function leftovers(kubectl, namespace) {
  const kinds = kubectl(['api-resources', '--verbs=list', '--namespaced', '-o', 'name'])
    .stdout.split('\n')
    .filter((k) => k && !/^events(\.|$)/.test(k));
  const list = JSON.parse(
    kubectl(['get', kinds.join(','), '-n', namespace, '-o', 'json', '--ignore-not-found']).stdout ||
      '{"items":[]}',
  );
  return list.items.map((o) => `${o.kind}/${o.metadata.name}`);
}

/** Objects a namespace has without any release: its ServiceAccount (and token) and the cluster CA. */
const NAMESPACE_OWN = [
  /^ServiceAccount\/default$/,
  /^Secret\/default-token-[a-z0-9]+$/,
  /^ConfigMap\/kube-root-ca\.crt$/,
];

/** After an uninstall: only what the namespace and the test made before the install remains. */
/** `helm uninstall --wait` of the release, its objects deleted in the foreground (dependents first). */
export function helmUninstall(helm, namespace) {
  helm([
    'uninstall',
    RELEASE,
    '-n',
    namespace,
    '--wait',
    '--cascade',
    'foreground',
    '--timeout',
    '2m',
  ]);
}

export async function checkNothingLeft(kubectl, namespace, { secrets = true } = {}) {
  const ours = (name) =>
    NAMESPACE_OWN.some((re) => re.test(name)) ||
    (secrets && Object.keys(SECRETS).some((s) => name === `Secret/${s}`));
  // Garbage collection of ReplicaSets and pods, and the fake node's deletions, take a moment.
  const left = await waitFor(
    () => {
      const names = leftovers(kubectl, namespace);
      return names.every(ours) ? names : null;
    },
    30_000,
    500,
  );
  const names = left ?? leftovers(kubectl, namespace);
  info(`left in ${namespace}: ${names.join(', ') || 'nothing'} (Events aside)`);
  check(
    left,
    `nothing of the release is left in ${namespace}${left ? '' : `: ${names.filter((n) => !ours(n)).join(', ')}`}`,
  );
}

export function parseManifest(text) {
  return parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter(Boolean);
}
