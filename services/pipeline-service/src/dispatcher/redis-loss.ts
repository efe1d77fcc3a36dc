import { randomUUID } from 'node:crypto';
import { isCluster, isRedisReady, keySlot, type RedisConnection } from '@po/queues';

/**
 * Tells whether Redis lost writes since the last look (decision 0124): a FLUSHALL, a restart
 * without persistence, a failover to a replica that had not received the last writes. Each process
 * keeps a counter of its own in a marker key (one per cluster master), and every check writes the
 * next value while reading the previous one (`SET … GET`, one round trip): a marker that is gone,
 * or holds an older value than the one last written, means Redis went back in time, and so may
 * every StageNext message published meanwhile.
 */
export interface RedisLossDetector {
  /**
   * True when a marker lost what this process wrote to it. False while the connection is not up
   * (the first look after it is, tells); rejects when Redis does not answer.
   */
  check(): Promise<boolean>;
}

/** A marker outlives its writer this long: a process gone for good leaves no key behind for long. */
const MARKER_TTL_MS = 60 * 60 * 1000;

export function createRedisLossDetector(connection: RedisConnection, prefix: string, instanceId: string = randomUUID()): RedisLossDetector {
  let seq = 0;
  // Per marker key: the value Redis confirmed last, and one sent whose answer never came (it may be there).
  const written = new Map<string, { confirmed: string; unconfirmed: string | null }>();
  return {
    async check() {
      if (!isRedisReady(connection)) return false;
      seq += 1;
      const value = `${seq}`;
      const answers = await Promise.all(
        markerTags(connection, prefix).map(async (tag) => {
          const key = `{${tag}}:${instanceId}`;
          const known = written.get(key);
          if (known) known.unconfirmed = value;
          const previous = await connection.set(key, value, 'PX', MARKER_TTL_MS, 'GET');
          written.set(key, { confirmed: value, unconfirmed: null });
          return known !== undefined && previous !== known.confirmed && previous !== known.unconfirmed;
        }),
      );
      return answers.includes(true);
    },
  };
}

/**
 * The hash tags of the markers: one key on a single Redis; on a cluster, one per master, each in a
 * slot that master serves (found from the cluster's slot table, so it follows a failover or a
 * resharding), since a lossy failover loses the writes of one master only.
 */
function markerTags(connection: RedisConnection, prefix: string): string[] {
  const base = `${prefix}:redis-loss`;
  return isCluster(connection) ? tagsPerMaster(connection.slots, base) : [base];
}

/** For a cluster's slot table (slot → its nodes, the master first): one tag in a slot of each master. */
export function tagsPerMaster(slots: readonly (readonly string[] | undefined)[], base: string): string[] {
  const masters = new Set<string>();
  for (const nodes of slots) if (nodes?.[0]) masters.add(nodes[0]);
  const tags: string[] = [];
  for (let i = 0; masters.size > 0 && i < 100_000; i += 1) {
    const tag = `${base}:${i}`;
    const owner = slots[keySlot(`{${tag}}`)]?.[0];
    if (owner && masters.delete(owner)) tags.push(tag);
  }
  return tags;
}
