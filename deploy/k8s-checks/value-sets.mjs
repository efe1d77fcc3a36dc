// The value sets the chart checks render (check-chart.mjs: helm lint, template, schemas, facts), and
// the real-cluster test dry-runs on an API server (deploy/k8s-local/test.mjs): the defaults, each
// sticky mode, the Gateway API, autoscaling, a minimal one, a pooler of the operator's, the
// chart's PgBouncer, and the chart's Redis examples (Sentinel, cluster; helm/…/examples/).
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

const example = (name) =>
  parse(
    readFileSync(
      new URL(`../../helm/pipeline-orchestration/examples/${name}.yaml`, import.meta.url),
      'utf8',
    ),
  );

/** The chart's five services, as its Deployments' components name them. */
export const SERVICES = [
  'api-gateway',
  'worker-gateway',
  'pipeline-service',
  'scheduler-service',
  'result-consumer',
];

const allServices = (patch) => Object.fromEntries(SERVICES.map((s) => [s, patch]));
/** Value sets to render: the defaults, each sticky mode, the Gateway API, autoscaling, a minimal one. */
export const VALUE_SETS = {
  default: {},
  'sticky-cookie': { workerRouting: { sticky: 'cookie' } },
  'sticky-none': {
    workerRouting: { sticky: 'none' },
    services: { 'worker-gateway': { replicas: 1 } },
  },
  'gateway-api-header-hash': {
    ingress: { enabled: false },
    gatewayApi: {
      enabled: true,
      parentRefs: [{ name: 'shared', namespace: 'gateway-system' }],
      hostnames: ['po.example.com'],
    },
  },
  'gateway-api-cookie': {
    ingress: { enabled: false },
    workerRouting: { sticky: 'cookie' },
    gatewayApi: {
      enabled: true,
      parentRefs: [{ name: 'shared', namespace: 'gateway-system', sectionName: 'https' }],
    },
  },
  'hpa-tls-extras': {
    image: { repository: 'registry.example.com/po', digest: `sha256:${'a'.repeat(64)}` },
    imagePullSecrets: [{ name: 'regcred' }],
    services: allServices({
      autoscaling: {
        enabled: true,
        minReplicas: 2,
        maxReplicas: 5,
        targetCPUUtilizationPercentage: 60,
      },
    }),
    ingress: {
      host: 'po.example.com',
      tlsSecretName: 'po-tls',
      annotations: { 'cert-manager.io/cluster-issuer': 'letsencrypt' },
    },
    config: {
      WORKER_BROKER_HANDOUT: true,
      WORKER_BROKER_HANDOUT_ACK: 'tenants-share-redis',
      GATEWAY_VISIBILITY_TIMEOUT: 30,
      LOG_LEVEL: 'warn',
    },
    workerBrokerSecret: { name: 'po-broker', key: 'url' },
    nodeSelector: { 'kubernetes.io/os': 'linux' },
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'po', effect: 'NoSchedule' }],
    podAnnotations: { 'prometheus.io/scrape': 'false' },
    serviceAccount: {
      annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/po' },
    },
  },
  'netpol-tls-monitoring': {
    networkPolicy: {
      enabled: true,
      ingressController: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'edge' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } },
      },
      extraGatewaySources: [
        { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'workers' } } },
      ],
    },
    database: {
      urlSecret: { name: 'po-db', key: 'DATABASE_URL' },
      caCert: { configMapName: 'po-db-ca', key: 'root.pem' },
    },
    migrations: { enabled: true, urlSecret: { name: 'po-db-owner', key: 'url' } },
    services: { 'api-gateway': { metricsPort: 9464 } },
    ingress: { annotations: { 'nginx.ingress.kubernetes.io/proxy-body-size': '64m' } },
    metrics: {
      serviceMonitor: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
      prometheusRule: { enabled: true },
    },
    config: {
      GATEWAY_MAX_INFLIGHT_PER_APP: 32,
      GATEWAY_MAX_WAITING_PER_APP: 64,
      GATEWAY_MAX_INFLIGHT_BYTES: 33554432,
      GATEWAY_MAX_FETCHERS: 256,
      RETENTION_PIPELINES_DAYS: 0,
    },
  },
  'tls-ca-secret': {
    database: {
      urlSecret: { name: 'po-db', key: 'DATABASE_URL' },
      caCert: { secretName: 'po-db-ca', key: 'ca.crt' },
    },
  },
  // A transaction-mode pooler of the operator's: its URL in urlSecret, the server's in directUrlSecret.
  'direct-url': {
    database: {
      directUrlSecret: { name: 'pipeline-orchestration-db-direct', key: 'DATABASE_DIRECT_URL' },
    },
    migrations: { enabled: true, lockTimeoutMs: 0 },
    services: {
      'api-gateway': { databasePoolMax: null },
      'worker-gateway': { databasePoolMax: 12 },
    },
    config: { DATABASE_STATEMENT_TIMEOUT_MS: 0, DATABASE_LOCK_TIMEOUT_MS: 2000 },
  },
  // The chart's PgBouncer with the defaults otherwise: its budget is checked like the default one.
  pgbouncer: {
    pgbouncer: { enabled: true },
    database: {
      directUrlSecret: { name: 'pipeline-orchestration-db-direct', key: 'DATABASE_DIRECT_URL' },
    },
  },
  'pgbouncer-netpol-hpa': {
    pgbouncer: {
      enabled: true,
      image: {
        repository: 'registry.example.com/pgbouncer',
        tag: '',
        digest: `sha256:${'b'.repeat(64)}`,
      },
      replicas: 3,
      port: 6432,
      poolSize: 10,
      podDisruptionBudget: { enabled: false, maxUnavailable: 1 },
    },
    database: { directUrlSecret: { name: 'po-db-server', key: 'url' } },
    migrations: { enabled: true, urlSecret: { name: 'po-db-owner', key: 'url' } },
    networkPolicy: { enabled: true },
    services: allServices({
      databasePoolMax: 10,
      autoscaling: {
        enabled: true,
        minReplicas: 2,
        maxReplicas: 8,
        targetCPUUtilizationPercentage: 70,
      },
    }),
    spreadAcrossNodes: false,
  },
  // The example values files operators start from, rendered as they are.
  'redis-sentinel': example('redis-sentinel'),
  'redis-cluster': example('redis-cluster'),
  minimal: {
    ingress: { enabled: false },
    migrations: { enabled: false },
    serviceAccount: { create: false },
    spreadAcrossNodes: false,
    services: allServices({
      replicas: 1,
      podDisruptionBudget: { enabled: false, maxUnavailable: 1 },
    }),
    workerRouting: { sticky: 'none' },
  },
};
