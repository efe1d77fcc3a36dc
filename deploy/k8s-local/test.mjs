#!/usr/bin/env node
// The real-cluster test (`npm run test:k8s`, via run.sh, which builds or reuses the binaries, starts
// the control plane and always stops it). Against a real Kubernetes API server, controllers and
// scheduler, with a fake node (fake-node.mjs), and the chart as it is in the repository:
//   1. the cluster: server version and a Ready node;
//   2. the CRDs the chart's optional kinds need (crds.yaml and keda-crd.yaml, minimal, written for
//      this test);
//   3. `--dry-run=server` of every value set the chart checks render (deploy/k8s-checks);
//   4. install, upgrade, rollback, helm test and uninstall of one release (lifecycle.mjs);
//   5. the Gateway API variant: installed, switched from header-hash to cookie, uninstalled;
//   6. the PgBouncer variant: installed, its pool size changed, uninstalled (pgbouncer.mjs).
// What a fake node cannot prove is in docs/k8s-testing.md.
import { existsSync } from 'node:fs';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COMPAT_VALUES } from '../k8s-checks/compat.mjs';
import { VALUE_SETS } from '../k8s-checks/value-sets.mjs';
import { connect } from './kube.mjs';
import { lifecycle } from './lifecycle.mjs';
import { pgbouncerVariant } from './pgbouncer.mjs';
import {
  checkAvailable,
  checkNothingLeft,
  helmUninstall,
  createNamespace,
  parseManifest,
  RELEASE,
} from './release.mjs';
import {
  check,
  checkCount,
  CheckFailed,
  clients,
  endStep,
  info,
  sameJson,
  step,
} from './tools.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHART = join(ROOT, 'helm', 'pipeline-orchestration');
const WORK = process.env.K8S_WORK;
if (!WORK) throw new Error('K8S_WORK is not set: run `npm run test:k8s` (deploy/k8s-local/run.sh)');
const kube = connect(WORK);
const { helm, kubectl } = clients(WORK);
const started = Date.now();

const valuesFile = (name, values) => {
  const file = join(WORK, `values-${name}.json`);
  writeFileSync(file, JSON.stringify(values)); // JSON is YAML
  return file;
};

async function cluster() {
  step('the cluster');
  const version = await kube.get('/version');
  check(
    version.gitVersion === 'v1.20.2',
    `kube-apiserver ${version.gitVersion} (${version.platform}) on ${kube.server}`,
  );
  const node = await kube.get('/api/v1/nodes/fake-node-1');
  check(
    node.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    'node fake-node-1 is Ready (fake-node.mjs: pods are reported, containers never run)',
  );
  info(
    `helm ${helm(['version', '--short']).stdout.trim()}, ${kubectl(['version', '--client', '-o', 'json']).stdout.match(/"gitVersion": "([^"]+)"/)?.[1] ?? 'kubectl'}`,
  );
  for (const file of [
    'services/api-gateway/dist/config.js',
    'services/worker-gateway/dist/config.js',
  ]) {
    if (!existsSync(join(ROOT, file)))
      throw new CheckFailed(
        `${file} is missing: build first (npx turbo run build); the helm test hook's script runs on the built services`,
      );
  }
}

async function crds() {
  step(
    'CRDs of the optional kinds (deploy/k8s-local/crds.yaml: HTTPRoute, BackendTrafficPolicy, ServiceMonitor, PrometheusRule; keda-crd.yaml: ScaledObject)',
  );
  const names = ['crds.yaml', 'keda-crd.yaml'].flatMap((file) =>
    kubectl(['apply', '-f', join(ROOT, 'deploy', 'k8s-local', file), '-o', 'name'])
      .stdout.trim()
      .split('\n'),
  );
  kubectl(['wait', '--for', 'condition=Established', '--timeout', '60s', ...names]);
  check(
    names.length === 5,
    `${names.length} CRDs established: ${names.map((n) => n.split('/')[1]).join(', ')}`,
  );
  // The stored-versus-rendered comparisons below can fail: the API server prunes a field the
  // schema does not know (a misspelling of the chart's, say).
  const route = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'misspelled', namespace: 'default' },
    spec: { rules: [{ sessionPersistance: { type: 'Cookie' } }] },
  };
  const stored = await kube.post(
    '/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes?dryRun=All',
    route,
  );
  check(
    !sameJson(stored.spec, route.spec),
    'a misspelled HTTPRoute field is pruned by the API server, so a stored spec no longer equals the rendered one',
  );
}

/** `helm install --dry-run=server`, then every rendered object (hooks too) created with dryRun=All. */
function dryRuns() {
  const namespace = 'po-dry';
  step(`--dry-run=server of every value set the chart checks render (namespace ${namespace})`);
  kubectl(['create', 'namespace', namespace]);
  const sets = { ...VALUE_SETS, compat: COMPAT_VALUES };
  for (const [name, values] of Object.entries(sets)) {
    const res = helm([
      'install',
      RELEASE,
      CHART,
      '-n',
      namespace,
      '--dry-run=server',
      '-f',
      valuesFile(`dry-${name}`, values),
      '-o',
      'json',
    ]);
    const release = JSON.parse(res.stdout);
    const docs = [
      ...parseManifest(release.manifest),
      ...(release.hooks ?? []).flatMap((h) => parseManifest(h.manifest)),
    ];
    const created = kubectl(
      ['create', '--dry-run=server', '--validate=strict', '-n', namespace, '-f', '-', '-o', 'name'],
      {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs }),
      },
    );
    const accepted = created.stdout.trim().split('\n').filter(Boolean);
    const apis = [
      ...new Set(
        docs
          .filter((d) => ['PodDisruptionBudget', 'HorizontalPodAutoscaler'].includes(d.kind))
          .map((d) => d.apiVersion),
      ),
    ];
    const oldApis = apis.every((a) => a === 'policy/v1beta1' || a === 'autoscaling/v2beta2');
    check(
      accepted.length === docs.length && oldApis,
      `${name.padEnd(24)} ${accepted.length}/${docs.length} objects accepted by the API server${apis.length ? ` (${apis.join(', ')} chosen from its discovery)` : ''}`,
    );
  }
  kubectl(['delete', 'namespace', namespace, '--wait=false']);
}

async function gatewayApi() {
  const namespace = 'po-gw';
  const [headerHash, cookie] = ['gateway-api-header-hash', 'gateway-api-cookie'];
  step(
    `Gateway API variant: helm install --wait with values "${headerHash}" (namespace ${namespace})`,
  );
  await createNamespace(kube, namespace);
  helm([
    'install',
    RELEASE,
    CHART,
    '-n',
    namespace,
    '-f',
    valuesFile(headerHash, VALUE_SETS[headerHash]),
    '--wait',
    '--timeout',
    '3m',
  ]);
  await checkAvailable(kube, namespace);
  const storedAsRendered = async () => {
    const docs = parseManifest(helm(['get', 'manifest', RELEASE, '-n', namespace]).stdout).filter(
      (d) => ['HTTPRoute', 'BackendTrafficPolicy'].includes(d.kind),
    );
    for (const doc of docs) {
      const [group, version] = doc.apiVersion.split('/');
      const plural = doc.kind === 'HTTPRoute' ? 'httproutes' : 'backendtrafficpolicies';
      const stored = await kube.get(
        `/apis/${group}/${version}/namespaces/${namespace}/${plural}/${doc.metadata.name}`,
      );
      check(
        sameJson(stored.spec, doc.spec),
        `${doc.kind} ${doc.metadata.name} stored exactly as rendered (no field pruned)`,
      );
    }
    return docs;
  };
  const docs1 = await storedAsRendered();
  check(
    docs1.filter((d) => d.kind === 'HTTPRoute').length === 2 &&
      docs1.some((d) => d.kind === 'BackendTrafficPolicy'),
    'two HTTPRoutes and the header-hash BackendTrafficPolicy',
  );

  step(`Gateway API variant: helm upgrade --wait to values "${cookie}" (session persistence)`);
  helm([
    'upgrade',
    RELEASE,
    CHART,
    '-n',
    namespace,
    '-f',
    valuesFile(cookie, VALUE_SETS[cookie]),
    '--wait',
    '--timeout',
    '3m',
  ]);
  await checkAvailable(kube, namespace);
  const docs2 = await storedAsRendered();
  const workers = docs2.find((d) => d.kind === 'HTTPRoute' && d.metadata.name.endsWith('-workers'));
  check(
    workers?.spec.rules[0].sessionPersistence?.type === 'Cookie',
    'the workers HTTPRoute carries cookie sessionPersistence',
  );
  const policy = await kube.get(
    `/apis/gateway.envoyproxy.io/v1alpha1/namespaces/${namespace}/backendtrafficpolicies/${RELEASE}-pipeline-orchestration-workers`,
    { allow: [404] },
  );
  check(
    policy?.kind !== 'BackendTrafficPolicy',
    'the BackendTrafficPolicy was removed by the upgrade',
  );

  step('Gateway API variant: helm uninstall --wait');
  helmUninstall(helm, namespace);
  await checkNothingLeft(kubectl, namespace);
}

try {
  await cluster();
  await crds();
  dryRuns();
  await lifecycle({
    kube,
    helm,
    kubectl,
    chart: CHART,
    namespace: 'po',
    workDir: WORK,
    root: ROOT,
  });
  await gatewayApi();
  await pgbouncerVariant({ kube, helm, kubectl, chart: CHART, valuesFile });
  endStep();
  console.log(
    `\ntest:k8s OK: ${checkCount()} checks against Kubernetes v1.20.2 in ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
} catch (err) {
  endStep();
  console.error(
    `\ntest:k8s FAILED after ${checkCount()} checks: ${err instanceof CheckFailed ? err.message : err.stack}`,
  );
  process.exitCode = 1;
} finally {
  kube.close();
}
