// Redis in the chart (check-chart.mjs; deploy/README.md "Redis topologies in the chart"): every
// pod that talks to Redis (the five services and the helm test Pod) gets the topology the values
// name and no other (REDIS_URL from a Secret or built from redis.host, or REDIS_SENTINELS + REDIS_SENTINEL_MASTER, or
// REDIS_CLUSTER_NODES), passwords only from Secrets, a CA mounted where REDIS_TLS_CA_FILE points,
// and the bounded waits; bad Redis values are refused at render time.
import { posix } from 'node:path';
import { SERVICES } from './value-sets.mjs';

/** Values the chart must refuse, and why (merged into check-chart's BAD_VALUES). */
export const REDIS_BAD_VALUES = {
  'Sentinel and cluster together (schema not)': [
    {
      redis: { sentinel: { hosts: ['s:26379'], masterName: 'm' }, cluster: { nodes: ['c:6379'] } },
    },
    /'\/redis'.*'not' failed/,
  ],
  'a braced QUEUE_PREFIX (schema pattern)': [{ config: { QUEUE_PREFIX: '{po}' } }, /QUEUE_PREFIX/],
  'a QUEUE_PREFIX with a space (schema pattern)': [
    { config: { QUEUE_PREFIX: 'po x' } },
    /QUEUE_PREFIX/,
  ],
  'sentinels without a master name (schema if/then)': [
    { redis: { sentinel: { hosts: ['s:26379'] } } },
    /masterName/,
  ],
  'a master name without sentinels (schema if/then; the services refuse it too)': [
    { redis: { sentinel: { masterName: 'm' } } },
    /hosts/,
  ],
  'a cluster seed without a port (schema pattern)': [
    { redis: { cluster: { nodes: ['redis-0'] } } },
    /nodes/,
  ],
  'a Redis password as a value (schema: only Secret references)': [
    { redis: { password: 'secret' } },
    /password/,
  ],
  'a Redis CA from a Secret and a ConfigMap at once (chart check)': [
    { redis: { tls: { caCert: { secretName: 'a', configMapName: 'b', key: 'ca.crt' } } } },
    /redis\.tls\.caCert/,
  ],
  'no replicas confirmation timeout (schema minimum)': [
    { redis: { replicaAckTimeoutMs: 0 } },
    /replicaAckTimeoutMs/,
  ],
};

const CA_PATH = '/etc/pipeline-orchestration/redis-ca/ca.crt';
const TOPOLOGY_ENV = [
  'REDIS_URL',
  'REDIS_SENTINELS',
  'REDIS_SENTINEL_MASTER',
  'REDIS_SENTINEL_PASSWORD',
  'REDIS_CLUSTER_NODES',
];

/** What the values ask for: the topology and the env each Redis client must then carry. */
export function redisExpectation(values) {
  const r = values.redis ?? {};
  const sentinels = r.sentinel?.hosts ?? [];
  const nodes = r.cluster?.nodes ?? [];
  const topology = sentinels.length ? 'sentinel' : nodes.length ? 'cluster' : 'single';
  const ca = r.tls?.caCert ?? {};
  return {
    topology,
    sentinels: sentinels.join(','),
    masterName: r.sentinel?.masterName,
    sentinelPassword: r.sentinel?.passwordSecret?.name ? r.sentinel.passwordSecret : null,
    nodes: nodes.join(','),
    url: {
      name: r.urlSecret?.name ?? 'pipeline-orchestration-redis',
      key: r.urlSecret?.key ?? 'REDIS_URL',
    },
    // One node in parts: a plain URL with no credentials (those come from REDIS_USERNAME and REDIS_PASSWORD).
    hostUrl: r.host
      ? `${r.tls?.enabled || ca.secretName || ca.configMapName ? 'rediss' : 'redis'}://${r.host.includes(':') && !r.host.startsWith('[') ? `[${r.host}]` : r.host}:${r.port ?? 6379}/${r.db ?? 0}`
      : null,
    username: r.username || null,
    password: r.passwordSecret?.name ? r.passwordSecret : null,
    ca: ca.secretName
      ? { secret: ca.secretName, key: ca.key ?? 'ca.crt' }
      : ca.configMapName
        ? { configMap: ca.configMapName, key: ca.key ?? 'ca.crt' }
        : null,
    tls: Boolean(r.tls?.enabled) || Boolean(ca.secretName || ca.configMapName),
    commandTimeoutMs: String(r.commandTimeoutMs ?? 5000),
    minReplicasAck: String(r.minReplicasAck ?? 0),
    replicaAckTimeoutMs: String(r.replicaAckTimeoutMs ?? 1000),
  };
}

const secretRef = (e, ref) =>
  e?.value === undefined &&
  e?.valueFrom?.secretKeyRef?.name === ref.name &&
  e.valueFrom.secretKeyRef.key === ref.key;

/** One pod spec's Redis env, mounts and volumes against the expectation; `who` names it in messages. */
function checkPod(who, pod, want, check) {
  const c = pod.containers[0];
  const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e]));
  const present = TOPOLOGY_ENV.filter((n) => env[n]);
  const expected = {
    single: ['REDIS_URL'],
    sentinel: [
      'REDIS_SENTINELS',
      'REDIS_SENTINEL_MASTER',
      ...(want.sentinelPassword ? ['REDIS_SENTINEL_PASSWORD'] : []),
    ],
    cluster: ['REDIS_CLUSTER_NODES'],
  }[want.topology];
  check(
    JSON.stringify(present) === JSON.stringify(expected),
    `${who}: Redis ${want.topology} wants env ${expected.join(', ')}, got ${present.join(', ') || 'none'}`,
  );
  if (want.topology === 'single' && want.hostUrl)
    check(
      env.REDIS_URL?.value === want.hostUrl && !env.REDIS_URL.valueFrom,
      `${who}: REDIS_URL is ${JSON.stringify(env.REDIS_URL)}, not ${want.hostUrl} from redis.host`,
    );
  else if (want.topology === 'single')
    check(
      secretRef(env.REDIS_URL, want.url),
      `${who}: REDIS_URL is not a secretKeyRef to ${want.url.name}/${want.url.key}`,
    );
  if (want.topology === 'sentinel') {
    check(
      env.REDIS_SENTINELS?.value === want.sentinels,
      `${who}: REDIS_SENTINELS is ${env.REDIS_SENTINELS?.value}, not ${want.sentinels}`,
    );
    check(
      env.REDIS_SENTINEL_MASTER?.value === want.masterName,
      `${who}: REDIS_SENTINEL_MASTER is ${env.REDIS_SENTINEL_MASTER?.value}, not ${want.masterName}`,
    );
    if (want.sentinelPassword)
      check(
        secretRef(env.REDIS_SENTINEL_PASSWORD, want.sentinelPassword),
        `${who}: REDIS_SENTINEL_PASSWORD is not a secretKeyRef to ${want.sentinelPassword.name}`,
      );
  }
  if (want.topology === 'cluster')
    check(
      env.REDIS_CLUSTER_NODES?.value === want.nodes,
      `${who}: REDIS_CLUSTER_NODES is ${env.REDIS_CLUSTER_NODES?.value}, not ${want.nodes}`,
    );
  check(
    want.username ? env.REDIS_USERNAME?.value === want.username : !env.REDIS_USERNAME,
    `${who}: REDIS_USERNAME is ${env.REDIS_USERNAME?.value}, not ${want.username}`,
  );
  check(
    want.password ? secretRef(env.REDIS_PASSWORD, want.password) : !env.REDIS_PASSWORD,
    `${who}: REDIS_PASSWORD ${want.password ? `is not a secretKeyRef to ${want.password.name}` : 'set without redis.passwordSecret'}`,
  );
  check(
    want.tls ? env.REDIS_TLS?.value === 'true' : !env.REDIS_TLS,
    `${who}: REDIS_TLS is ${env.REDIS_TLS?.value} (tls wanted: ${want.tls})`,
  );
  for (const [name, value] of [
    ['REDIS_COMMAND_TIMEOUT_MS', want.commandTimeoutMs],
    ['REDIS_MIN_REPLICAS_ACK', want.minReplicasAck],
    ['REDIS_REPLICA_ACK_TIMEOUT_MS', want.replicaAckTimeoutMs],
  ]) {
    check(env[name]?.value === value, `${who}: ${name} is ${env[name]?.value}, not ${value}`);
  }

  // The CA: REDIS_TLS_CA_FILE names a file that a read-only mount of the named Secret or ConfigMap holds.
  const file = env.REDIS_TLS_CA_FILE?.value;
  const volume = (pod.volumes ?? []).find((v) => v.name === 'redis-ca');
  const mount = (c.volumeMounts ?? []).find((m) => m.name === 'redis-ca');
  if (!want.ca) {
    check(
      !file && !volume && !mount,
      `${who}: a Redis CA is mounted or named without redis.tls.caCert`,
    );
    return;
  }
  check(file === CA_PATH, `${who}: REDIS_TLS_CA_FILE is ${file}, not ${CA_PATH}`);
  check(
    mount?.readOnly === true && mount.mountPath === posix.dirname(CA_PATH),
    `${who}: the Redis CA is not mounted read-only at ${posix.dirname(CA_PATH)}`,
  );
  const source = want.ca.secret ? volume?.secret : volume?.configMap;
  const sourceName = want.ca.secret ? source?.secretName : source?.name;
  check(
    sourceName === (want.ca.secret ?? want.ca.configMap) &&
      source?.items?.length === 1 &&
      source.items[0].key === want.ca.key &&
      source.items[0].path === posix.basename(CA_PATH),
    `${who}: the redis-ca volume does not map ${want.ca.secret ? 'Secret' : 'ConfigMap'} ${want.ca.secret ?? want.ca.configMap}/${want.ca.key} to ${posix.basename(CA_PATH)}`,
  );
}

/** Checks one render; returns the topology it found, so check-chart can tell each one was covered. */
export function checkRedis({ values, docs, release, check }) {
  const want = redisExpectation(values);
  for (const service of SERVICES) {
    const dep = docs.find(
      (d) =>
        d.kind === 'Deployment' &&
        d.metadata.name === `${release}-pipeline-orchestration-${service}`,
    );
    check(
      Boolean(dep),
      `${service}: no Deployment rendered, so its Redis settings cannot be checked`,
    );
    if (dep) checkPod(service, dep.spec.template.spec, want, check);
  }
  const testPod = docs.find(
    (d) => d.kind === 'Pod' && d.metadata.annotations?.['helm.sh/hook'] === 'test',
  );
  check(Boolean(testPod), 'no helm test Pod rendered, so its Redis settings cannot be checked');
  if (testPod) checkPod('the helm test Pod', testPod.spec, want, check);
  // The migration Job reaches PostgreSQL only.
  for (const job of docs.filter((d) => d.kind === 'Job')) {
    const names = (job.spec.template.spec.containers[0].env ?? []).map((e) => e.name);
    check(
      !names.some((n) => n.startsWith('REDIS_')),
      `the migration Job carries Redis settings (${names.filter((n) => n.startsWith('REDIS_')).join(', ')})`,
    );
  }
  return {
    topology: want.topology,
    host: Boolean(want.hostUrl),
    ca: want.ca ? (want.ca.secret ? 'secret' : 'configMap') : null,
  };
}
