// The value sets the chart checks render (check-chart.mjs: helm lint, template, schemas, facts), and
// the real-cluster test dry-runs on an API server (deploy/k8s-local/test.mjs): the defaults, each
// sticky mode, the Gateway API, autoscaling, a minimal one, a pooler of the operator's, the
// chart's PgBouncer, the pod extras and the addresses in parts (extensible.mjs), the worker fleet's
// in-cluster affinity and KEDA (worker-fleet.mjs), and the chart's Redis examples (Sentinel,
// cluster; helm/…/examples/).
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
  // Every pod extra at the top level, one service replacing each with its own (decision 0128), and
  // the Cloud SQL proxy recipe (deploy/README.md): the database in parts at the sidecar, IAM login
  // (no password), Redis in parts with its password from a Secret. Kubernetes 1.20 objects only:
  // the real API server test dry-runs it on 1.20 (no native sidecars there).
  extensible: {
    database: {
      urlSecret: { name: '', key: 'DATABASE_URL' },
      host: '127.0.0.1',
      port: 5432,
      name: 'pipeline_orchestration',
      user: 'po-sa@example-project.iam',
      params: 'sslmode=disable',
    },
    redis: {
      urlSecret: { name: '', key: 'REDIS_URL' },
      host: 'redis.example.internal',
      port: 6380,
      db: 1,
      username: 'po',
      passwordSecret: { name: 'po-redis-password', key: 'password' },
    },
    extraEnv: [
      { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel-collector.observability:4318' },
      { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    ],
    envFrom: [
      { configMapRef: { name: 'po-extra-settings' } },
      { secretRef: { name: 'po-extra-secrets', optional: true }, prefix: 'EXTRA_' },
    ],
    extraVolumes: [{ name: 'cloudsql', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }],
    extraVolumeMounts: [{ name: 'cloudsql', mountPath: '/cloudsql', readOnly: true }],
    extraContainers: [
      {
        name: 'cloud-sql-proxy',
        image: 'gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1',
        args: [
          '--port=5432',
          '--auto-iam-authn',
          '--private-ip',
          'example-project:europe-west1:po',
        ],
        securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false },
        resources: { requests: { cpu: '50m', memory: '64Mi' } },
        volumeMounts: [{ name: 'cloudsql', mountPath: '/cloudsql' }],
      },
    ],
    initContainers: [{ name: 'wait', image: 'busybox:1.36', command: ['sh', '-c', 'true'] }],
    priorityClassName: 'po-high',
    podLabels: { 'example.com/team': 'pipelines' },
    podAnnotations: { 'example.com/owner': 'pipelines' },
    serviceAnnotations: { 'cloud.google.com/neg': '{"ingress": true}' },
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 50,
            podAffinityTerm: {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: { matchLabels: { 'app.kubernetes.io/instance': 'po' } },
            },
          },
        ],
      },
    },
    topologySpreadConstraints: [
      {
        maxSkew: 1,
        topologyKey: 'topology.kubernetes.io/zone',
        whenUnsatisfiable: 'ScheduleAnyway',
      },
    ],
    services: {
      // Each of its values replaces the top-level one, and only on its own pods and Service.
      'scheduler-service': {
        extraEnv: [{ name: 'SCHEDULER_ONLY', value: '1' }],
        envFrom: [],
        extraVolumes: [{ name: 'scratch', emptyDir: {} }],
        extraVolumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
        extraContainers: [],
        initContainers: [],
        priorityClassName: '',
        podLabels: { 'example.com/tier': 'scheduler' },
        podAnnotations: { 'vault.hashicorp.com/agent-inject': 'true' },
        nodeSelector: { 'example.com/pool': 'scheduler' },
        tolerations: [
          { key: 'example.com/pool', operator: 'Equal', value: 'scheduler', effect: 'NoSchedule' },
        ],
        affinity: {},
        topologySpreadConstraints: [
          {
            maxSkew: 2,
            topologyKey: 'kubernetes.io/hostname',
            whenUnsatisfiable: 'DoNotSchedule',
            labelSelector: { matchLabels: { 'app.kubernetes.io/component': 'scheduler-service' } },
          },
        ],
        serviceAnnotations: { 'example.com/internal': 'true' },
      },
      // But null there keeps the top-level value.
      'result-consumer': { extraEnv: null, tolerations: null },
    },
  },
  // A pooler of the operator's in front, the database given in parts with its password from a
  // Secret (params pgbouncer=true) and the server's URL in directUrlSecret; Redis in parts over TLS.
  'database-parts-own-pooler': {
    database: {
      urlSecret: { name: '', key: 'DATABASE_URL' },
      host: 'pooler.db.svc.cluster.local',
      port: 6432,
      name: 'po',
      user: 'po_app',
      passwordSecret: { name: 'po-db-password', key: 'password' },
      params: 'pgbouncer=true&sslmode=require',
      directUrlSecret: { name: 'po-db-direct', key: 'DATABASE_DIRECT_URL' },
    },
    redis: {
      urlSecret: { name: '', key: 'REDIS_URL' },
      host: 'redis.example.internal',
      passwordSecret: { name: 'po-redis', key: 'password' },
      tls: { enabled: true },
    },
    extraEnv: [{ name: 'OTEL_RESOURCE_ATTRIBUTES', value: 'deployment.environment=production' }],
    tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }],
    services: { 'api-gateway': { extraEnv: [] } },
  },
  // Worker fleet (decision 0129): in-cluster affinity set by hand, and KEDA scaling two worker
  // Deployments, one with its own Prometheus, polling and cooldown, on a Prometheus without a
  // namespace label.
  'keda-affinity': {
    config: { GATEWAY_VISIBILITY_TIMEOUT: 120 },
    workerRouting: { inCluster: { sessionAffinity: 'ClientIP', clientIPTimeoutSeconds: 600 } },
    keda: {
      enabled: true,
      prometheus: { serverAddress: 'http://prometheus.monitoring.svc:9090', namespaceLabel: '' },
      pollingInterval: 10,
      cooldownPeriod: 120,
      scaledWorkers: [
        {
          name: 'echo',
          targetName: 'echo-worker',
          applicationId: 1,
          handler: 'echo',
          threshold: 8,
          minReplicas: 0,
          maxReplicas: 20,
        },
        {
          name: 'resize',
          targetName: 'image-workers',
          applicationId: 12,
          handler: 'resize.v2',
          threshold: 2,
          activationThreshold: 4,
          minReplicas: 1,
          maxReplicas: 5,
          serverAddress: 'https://thanos.example.com',
          pollingInterval: 5,
          cooldownPeriod: 0,
        },
      ],
    },
  },
  // kube-proxy balancing every connection: only with one replica for in-cluster workers (NOTES say).
  'affinity-none': {
    workerRouting: { inCluster: { sessionAffinity: 'None', clientIPTimeoutSeconds: null } },
    keda: {
      enabled: true,
      scaledWorkers: [
        {
          name: 'echo',
          targetName: 'echo-worker',
          applicationId: 3,
          handler: 'echo',
          threshold: 4,
          minReplicas: 1,
          maxReplicas: 4,
        },
      ],
    },
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
