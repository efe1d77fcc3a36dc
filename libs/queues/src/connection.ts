import type { QueueBase } from 'bullmq';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { envReader, redisConfig, type RedisConfig } from '@po/config';
import { keySlot } from './key-slot.js';

/** A connection to one node (directly or found through Sentinel) or to a cluster. */
export type RedisConnection = Redis | Cluster;

/** REDIS_URL alone, with the defaults every other setting has (tests, tools): the config's own parse. */
export function singleRedis(url: string): RedisConfig {
  return redisConfig(envReader({ REDIS_URL: url }));
}

/**
 * A node that answers READONLY was a primary and is a replica now (a failover): reconnect, which
 * asks Sentinel (or the cluster) for the new primary, and send the command again there.
 */
const reconnectOnReadOnly = (err: Error): 2 | false =>
  err.message.startsWith('READONLY') ? 2 : false;

/**
 * Producers fail fast when Redis is away (no offline queue, so a 2xx is never given for a message
 * that sits in process memory); BullMQ workers retry forever (maxRetriesPerRequest: null). Every
 * command has a reply deadline (REDIS_COMMAND_TIMEOUT_MS), so a Redis that stops answering without
 * closing the connection fails calls instead of holding them; a worker connection's deadline is
 * longer by BullMQ's longest blocking wait (its drainDelay, 5 s), which must not count as silence.
 */
export function createRedis(
  config: RedisConfig | string,
  role: 'producer' | 'worker',
): RedisConnection {
  const c = typeof config === 'string' ? singleRedis(config) : config;
  const node: RedisOptions = {
    lazyConnect: false,
    enableOfflineQueue: role === 'worker',
    maxRetriesPerRequest: role === 'worker' ? null : 1,
    connectionName: `po-${role}`,
    commandTimeout: role === 'worker' ? c.commandTimeoutMs + 10_000 : c.commandTimeoutMs,
    reconnectOnError: reconnectOnReadOnly,
    ...(c.username ? { username: c.username } : {}),
    ...(c.password ? { password: c.password } : {}),
    ...(c.tls ? { tls: c.ca ? { ca: c.ca } : {} } : {}),
  };
  const t = c.topology;
  if (t.kind === 'cluster') {
    const options: ClusterOptions = {
      redisOptions: node,
      enableOfflineQueue: role === 'worker',
      // Reads and writes go to primaries: a replica may lag what a 202 promised.
      scaleReads: 'master',
      slotsRefreshTimeout: Math.min(c.commandTimeoutMs, 2000),
      // A moved slot during a failover is retried a few times before the call fails.
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 100,
    };
    return new Cluster(t.nodes, options);
  }
  if (t.kind === 'sentinel') {
    return new Redis({
      ...node,
      sentinels: t.sentinels,
      name: t.masterName,
      role: 'master',
      ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
      ...(c.tls ? { enableTLSForSentinelMode: true, sentinelTLS: c.ca ? { ca: c.ca } : {} } : {}),
      sentinelCommandTimeout: Math.min(c.commandTimeoutMs, 2000),
      // Ask the sentinels again soon after losing the primary: a failover takes seconds.
      sentinelRetryStrategy: (times: number) => Math.min(100 * times, 1000),
      // No +switch-master subscription (ioredis 5.11): a detector left from the lost primary's
      // connection can fire while the client is asking the sentinels, which ends the client for
      // good (status `end`, "Connection is closed", ~2 of 30 idle clients per failover here). A
      // killed primary closes its connections and a demoted one answers READONLY, so the client
      // finds the new primary without it.
      failoverDetector: false,
    });
  }
  return new Redis(t.url, node);
}

/** Readiness probe shared by the services. */
export async function pingRedis(redis: RedisConnection): Promise<void> {
  const answer = await redis.ping();
  if (answer !== 'PONG') throw new Error(`unexpected PING answer ${answer}`);
}

/** Fewer replicas than required acknowledged a write in time: the write may yet be lost in a failover. */
export class ReplicasNotConfirmed extends Error {
  constructor(
    readonly required: number,
    readonly confirmed: number,
  ) {
    super(`${confirmed} of ${required} required Redis replicas confirmed the write`);
  }
}

/**
 * Waits until at least `replicas` replicas hold every write this connection sent to the node that
 * owns `key` (Redis WAIT). WAIT counts the writes of the connection it is sent on, so on a cluster
 * it goes to the connection of the key's primary, the one that carried the write.
 */
export async function confirmReplicated(
  connection: RedisConnection,
  key: string,
  replicas: number,
  timeoutMs: number,
): Promise<void> {
  if (replicas <= 0) return;
  let confirmed: unknown;
  if (isCluster(connection)) {
    const owner = connection.slots[keySlot(key)]?.[0];
    const primary = connection
      .nodes('master')
      .find((n) => `${n.options.host}:${n.options.port}` === owner);
    if (!primary) throw new ReplicasNotConfirmed(replicas, 0);
    confirmed = await primary.call('WAIT', replicas, timeoutMs);
  } else {
    confirmed = await connection.call('WAIT', replicas, timeoutMs);
  }
  const n = Number(confirmed);
  if (!(n >= replicas)) throw new ReplicasNotConfirmed(replicas, Number.isFinite(n) ? n : 0);
}

/**
 * BullMQ sets a queue's connection up once (it waits for Redis and asks for its version) and keeps
 * that promise: if Redis was away at that moment, the queue fails every later call with the old
 * error, long after Redis is back. Producers fail fast, so a queue first used during an outage is
 * broken for good. `onBroken` runs when that happens, so whoever caches the queue drops it and
 * makes a fresh one on its next use.
 */
export function dropIfSetupFails<Q extends QueueBase>(queue: Q, onBroken: () => void): Q {
  // BullMQ re-emits every error of the shared connection on each queue, and prints it as a raw
  // stack when nobody listens. The calls that fail report it where it matters (a 503, a warning
  // of the service's logger, readiness): the queue's copy of it is dropped.
  queue.on('error', () => undefined);
  queue.waitUntilReady().catch(() => {
    onBroken();
    void queue.close().catch(() => undefined);
  });
  return queue;
}

/** One queue, made on first use and made again after its setup failed (see dropIfSetupFails). */
export function reopeningQueue<Q extends QueueBase>(
  make: () => Q,
): { get(): Q; close(): Promise<void> } {
  let current: Q | undefined;
  return {
    get() {
      if (!current) {
        const made = make();
        current = dropIfSetupFails(made, () => {
          if (current === made) current = undefined;
        });
      }
      return current;
    },
    close: async () => {
      await current?.close();
    },
  };
}

/** A cluster connection: no command or pipeline may span slots on it. */
export function isCluster(connection: RedisConnection): connection is Cluster {
  return connection instanceof Cluster;
}

/** Whether the connection is up and may take commands now (a cluster: its slots are known). */
export function isRedisReady(connection: RedisConnection): boolean {
  return connection.status === 'ready';
}
