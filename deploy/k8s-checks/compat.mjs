// The chart on every Kubernetes it claims (Chart.yaml kubeVersion, decision 0091), for
// check-chart.mjs. Each entry renders the chart with all version-dependent objects on, for one
// Kubernetes version, either as a cluster's discovery would (--api-versions listing the
// group/version/kinds that API server serves) or offline (--kube-version alone), and checks:
//   - helm lint --strict passes at that version (helm warns about deprecated or removed APIs);
//   - PodDisruptionBudgets and HorizontalPodAutoscalers use the API version expected there, and
//     unhealthyPodEvictionPolicy appears only where the API has it;
//   - every rendered document is a kind that API server serves (a removed API fails the install);
//   - below the range, helm refuses the chart.
// The 1.20 renders are typechecked against kubernetes-types 1.21 (the oldest published types that
// have policy/v1beta1 and autoscaling/v2beta2 as 1.20 serves them; 1.21 added no field the chart
// uses), the 1.30 ones against 1.30 with the other value sets.

const SERVICES = [
  'api-gateway',
  'worker-gateway',
  'pipeline-service',
  'scheduler-service',
  'result-consumer',
];

/** Kinds the chart renders (without CRDs) that every supported version serves at these versions. */
const CORE = [
  'v1/ConfigMap',
  'v1/Service',
  'v1/ServiceAccount',
  'v1/Pod',
  'apps/v1/Deployment',
  'batch/v1/Job',
  'networking.k8s.io/v1/Ingress',
  'networking.k8s.io/v1/NetworkPolicy',
];
/** What each API server serves of the kinds whose version moved (Kubernetes deprecation guide). */
const SERVED = {
  '1.20': [
    'policy/v1beta1/PodDisruptionBudget',
    'autoscaling/v1/HorizontalPodAutoscaler',
    'autoscaling/v2beta1/HorizontalPodAutoscaler',
    'autoscaling/v2beta2/HorizontalPodAutoscaler',
  ],
  1.22: [
    'policy/v1/PodDisruptionBudget',
    'policy/v1beta1/PodDisruptionBudget',
    'autoscaling/v1/HorizontalPodAutoscaler',
    'autoscaling/v2beta1/HorizontalPodAutoscaler',
    'autoscaling/v2beta2/HorizontalPodAutoscaler',
  ],
  1.25: [
    'policy/v1/PodDisruptionBudget',
    'autoscaling/v1/HorizontalPodAutoscaler',
    'autoscaling/v2/HorizontalPodAutoscaler',
    'autoscaling/v2beta2/HorizontalPodAutoscaler',
  ],
  '1.30': [
    'policy/v1/PodDisruptionBudget',
    'autoscaling/v1/HorizontalPodAutoscaler',
    'autoscaling/v2/HorizontalPodAutoscaler',
  ],
};
const OLD = {
  pdb: 'policy/v1beta1',
  hpa: 'autoscaling/v2beta2',
  unhealthyPodEvictionPolicy: false,
};

/** Kubernetes version, whether discovery lists its kinds, what must be rendered, which types check it. */
export const KUBE_MATRIX = [
  {
    name: 'kube-1.20.2',
    kube: '1.20.2',
    served: '1.20',
    discovery: true,
    expect: OLD,
    types: '1.21',
  },
  {
    name: 'kube-1.20.2-offline',
    kube: '1.20.2',
    served: '1.20',
    discovery: false,
    expect: OLD,
    types: '1.21',
  },
  {
    name: 'kube-1.22',
    kube: '1.22.17',
    served: '1.22',
    discovery: true,
    expect: { pdb: 'policy/v1', hpa: 'autoscaling/v2beta2', unhealthyPodEvictionPolicy: false },
  },
  {
    name: 'kube-1.25-offline',
    kube: '1.25.16',
    served: '1.25',
    discovery: false,
    expect: { pdb: 'policy/v1', hpa: 'autoscaling/v2', unhealthyPodEvictionPolicy: false },
  },
  {
    name: 'kube-1.30',
    kube: '1.30.0',
    served: '1.30',
    discovery: true,
    expect: { pdb: 'policy/v1', hpa: 'autoscaling/v2', unhealthyPodEvictionPolicy: true },
    types: '1.30',
  },
];
/** Versions below the range, which helm must refuse. */
export const UNSUPPORTED = ['1.19.16'];

/** Every object whose API differs between versions, plus the usual ones: HPAs, PDBs, NetworkPolicies. */
export const COMPAT_VALUES = {
  services: Object.fromEntries(
    SERVICES.map((s) => [
      s,
      {
        autoscaling: {
          enabled: true,
          minReplicas: 2,
          maxReplicas: 4,
          targetCPUUtilizationPercentage: 70,
        },
      },
    ]),
  ),
  networkPolicy: { enabled: true },
  database: { caCert: { secretName: 'po-db-ca', key: 'ca.crt' } },
};

/** kubernetes-types 1.21 modules, for the renders of the oldest supported version. */
export const SCHEMAS_1_21 = {
  'v1/ConfigMap': ['kubernetes-types-1.21/core/v1', 'ConfigMap'],
  'v1/Service': ['kubernetes-types-1.21/core/v1', 'Service'],
  'v1/ServiceAccount': ['kubernetes-types-1.21/core/v1', 'ServiceAccount'],
  'v1/Pod': ['kubernetes-types-1.21/core/v1', 'Pod'],
  'apps/v1/Deployment': ['kubernetes-types-1.21/apps/v1', 'Deployment'],
  'batch/v1/Job': ['kubernetes-types-1.21/batch/v1', 'Job'],
  'policy/v1beta1/PodDisruptionBudget': [
    'kubernetes-types-1.21/policy/v1beta1',
    'PodDisruptionBudget',
  ],
  'autoscaling/v2beta2/HorizontalPodAutoscaler': [
    'kubernetes-types-1.21/autoscaling/v2beta2',
    'HorizontalPodAutoscaler',
  ],
  'networking.k8s.io/v1/Ingress': ['kubernetes-types-1.21/networking/v1', 'Ingress'],
  'networking.k8s.io/v1/NetworkPolicy': ['kubernetes-types-1.21/networking/v1', 'NetworkPolicy'],
};

/**
 * Renders and checks each entry of KUBE_MATRIX. `helm(args)` runs the pinned binary, `parse(text)`
 * returns the documents, `check(name, ok, message)` records a failure. Returns the renders.
 */
export function checkKubeVersions({ helm, chart, release, namespace, valuesFile, parse, check }) {
  const file = valuesFile('compat', COMPAT_VALUES);
  const renders = [];
  for (const entry of KUBE_MATRIX) {
    const served = new Set([...CORE, ...SERVED[entry.served]]);
    const apiVersions = entry.discovery ? ['--api-versions', [...served].join(',')] : [];
    // helm lint has no --api-versions: it renders as offline, with that version's deprecation rules.
    const lint = helm(['lint', '--strict', chart, '-f', file, '--kube-version', entry.kube]);
    check(
      entry.name,
      lint.status === 0,
      `helm lint --strict at Kubernetes ${entry.kube} failed:\n${lint.stdout}${lint.stderr}`,
    );
    const out = helm([
      'template',
      release,
      chart,
      '-n',
      namespace,
      '-f',
      file,
      '--kube-version',
      entry.kube,
      ...apiVersions,
    ]);
    if (out.status !== 0) {
      check(entry.name, false, `helm template at Kubernetes ${entry.kube} failed:\n${out.stderr}`);
      continue;
    }
    const docs = parse(entry.name, out.stdout);
    const of = (kind) => docs.filter((d) => d.kind === kind);
    for (const doc of docs) {
      const key = `${doc.apiVersion}/${doc.kind}`;
      check(
        entry.name,
        served.has(key),
        `${key} (${doc.metadata.name}) is not served by Kubernetes ${entry.served}`,
      );
    }
    const pdbs = of('PodDisruptionBudget');
    const hpas = of('HorizontalPodAutoscaler');
    check(
      entry.name,
      pdbs.length === SERVICES.length && hpas.length === SERVICES.length,
      `expected ${SERVICES.length} PDBs and HPAs, got ${pdbs.length} and ${hpas.length}`,
    );
    for (const pdb of pdbs) {
      check(
        entry.name,
        pdb.apiVersion === entry.expect.pdb,
        `PodDisruptionBudget ${pdb.metadata.name} is ${pdb.apiVersion}, expected ${entry.expect.pdb}`,
      );
      const has = pdb.spec.unhealthyPodEvictionPolicy !== undefined;
      check(
        entry.name,
        has === entry.expect.unhealthyPodEvictionPolicy,
        `PodDisruptionBudget ${pdb.metadata.name} ${has ? 'sets' : 'lacks'} unhealthyPodEvictionPolicy at ${entry.kube}`,
      );
    }
    for (const hpa of hpas) {
      check(
        entry.name,
        hpa.apiVersion === entry.expect.hpa,
        `HorizontalPodAutoscaler ${hpa.metadata.name} is ${hpa.apiVersion}, expected ${entry.expect.hpa}`,
      );
      const wg = hpa.metadata.name.endsWith('-worker-gateway');
      check(
        entry.name,
        Boolean(hpa.spec.behavior?.scaleDown) === wg,
        `HorizontalPodAutoscaler ${hpa.metadata.name}: the slow scale-in is ${wg ? 'missing' : 'unexpected'}`,
      );
    }
    renders.push({ ...entry, docs });
  }
  for (const kube of UNSUPPORTED) {
    const out = helm([
      'template',
      release,
      chart,
      '-n',
      namespace,
      '-f',
      file,
      '--kube-version',
      kube,
    ]);
    check(
      `kube-${kube}`,
      out.status !== 0 && /kubeVersion/.test(out.stderr),
      `Kubernetes ${kube} is below the supported range but helm template accepted it`,
    );
  }
  return renders;
}

/** A PodDisruptionBudget of the oldest API with the newer field: the 1.21 types must refuse it. */
export function brokenOldDocuments(renders) {
  const pdb = structuredClone(
    renders.find((r) => r.types === '1.21')?.docs.find((d) => d.kind === 'PodDisruptionBudget'),
  );
  if (!pdb) return [];
  pdb.spec.unhealthyPodEvictionPolicy = 'AlwaysAllow'; // policy/v1 on 1.27+ only
  return [{ doc: pdb, as: 'policy/v1beta1/PodDisruptionBudget', schemas: SCHEMAS_1_21 }];
}
