import type { EnvReader } from './env.js';

export interface HostPort {
  host: string;
  port: number;
}

/** How the services reach Redis: one node by URL, a primary found through Sentinel, or a cluster. */
export type RedisTopology =
  | { kind: 'single'; url: string }
  | { kind: 'sentinel'; sentinels: HostPort[]; masterName: string; sentinelPassword: string | null }
  | { kind: 'cluster'; nodes: HostPort[] };

export interface RedisConfig {
  topology: RedisTopology;
  /** ACL user and password of the data nodes (REDIS_USERNAME, REDIS_PASSWORD); a single node's URL may carry them instead. */
  username: string | null;
  password: string | null;
  /** TLS to the data nodes (and sentinels): REDIS_TLS, or a `rediss:` URL, or a CA given. */
  tls: boolean;
  /** PEM of the CA that signed the Redis servers' certificates (REDIS_TLS_CA_FILE). */
  ca: string | null;
  /** Longest wait for any one reply before the command fails (REDIS_COMMAND_TIMEOUT_MS). */
  commandTimeoutMs: number;
  /**
   * Replicas that must hold an accepted result before the worker-gateway answers 202
   * (REDIS_MIN_REPLICAS_ACK, Redis WAIT), and how long it waits for them (REDIS_REPLICA_ACK_TIMEOUT_MS).
   */
  minReplicasAck: number;
  replicaAckTimeoutMs: number;
}

const HOST_PORT = /^\[?([^\s[\]]+?)\]?:(\d{1,5})$/;

/** `host:port,host:port` (IPv6 in brackets) → the list; problems are reported through `env`. */
export function parseHostPorts(env: EnvReader, name: string, value: string): HostPort[] {
  const list: HostPort[] = [];
  for (const part of value.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const m = HOST_PORT.exec(part);
    const port = Number(m?.[2]);
    if (!m || port < 1 || port > 65535) {
      env.problem(`${name}: "${part}" is not host:port`);
      continue;
    }
    list.push({ host: m[1]!, port });
  }
  if (list.length === 0) env.problem(`${name} names no host:port`);
  return list;
}

export function redisConfig(env: EnvReader): RedisConfig {
  const url = env.url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis', 'rediss']);
  const sentinels = env.str('REDIS_SENTINELS', '');
  const clusterNodes = env.str('REDIS_CLUSTER_NODES', '');
  const masterName = env.str('REDIS_SENTINEL_MASTER', '');
  if (sentinels !== '' && clusterNodes !== '') env.problem('set REDIS_SENTINELS or REDIS_CLUSTER_NODES, not both');
  if (sentinels !== '' && masterName === '') env.problem('REDIS_SENTINEL_MASTER is required with REDIS_SENTINELS');
  if (sentinels === '' && masterName !== '') env.problem('REDIS_SENTINEL_MASTER needs REDIS_SENTINELS');
  const sentinelPassword = env.str('REDIS_SENTINEL_PASSWORD', '');
  const topology: RedisTopology =
    sentinels !== ''
      ? { kind: 'sentinel', sentinels: parseHostPorts(env, 'REDIS_SENTINELS', sentinels), masterName, sentinelPassword: sentinelPassword || null }
      : clusterNodes !== ''
        ? { kind: 'cluster', nodes: parseHostPorts(env, 'REDIS_CLUSTER_NODES', clusterNodes) }
        : { kind: 'single', url };
  const ca = env.file('REDIS_TLS_CA_FILE');
  return {
    topology,
    username: env.str('REDIS_USERNAME', '') || null,
    password: env.str('REDIS_PASSWORD', '') || null,
    tls: env.bool('REDIS_TLS', url.startsWith('rediss:')) || ca !== null,
    ca,
    commandTimeoutMs: env.int('REDIS_COMMAND_TIMEOUT_MS', 5000, { min: 100, max: 600_000 }),
    minReplicasAck: env.int('REDIS_MIN_REPLICAS_ACK', 0, { min: 0, max: 16 }),
    replicaAckTimeoutMs: env.int('REDIS_REPLICA_ACK_TIMEOUT_MS', 1000, { min: 10, max: 60_000 }),
  };
}

/** Where Redis is, for logs: never a password. */
export function describeRedis(config: RedisConfig): string {
  const t = config.topology;
  const list = (hs: HostPort[]) => hs.map((h) => `${h.host}:${h.port}`).join(',');
  if (t.kind === 'sentinel') return `sentinel ${t.masterName} via ${list(t.sentinels)}`;
  if (t.kind === 'cluster') return `cluster via ${list(t.nodes)}`;
  const u = new URL(t.url);
  return `${u.protocol}//${u.host}`;
}
