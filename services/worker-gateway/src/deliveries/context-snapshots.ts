import { readContextSnapshot, sqlOf, type Db } from '@po/db';
import type { ContextItem, StageNextJob, StageNextMessage } from '@po/contracts';

/** Parsed snapshots kept per process, by bytes of their JSON: a fan-out's deliveries share one. */
const CACHE_BYTES = 64 * 1024 * 1024;

interface Cache {
  /** Least recently used first. */
  entries: Map<string, { items: Promise<ContextItem[]>; bytes: number }>;
  bytes: number;
}

const caches = new WeakMap<Db, Cache>();

/**
 * The §5.1 payload of a StageNext job: a job whose context was too large to copy into each message
 * names a snapshot (decision 0121), read here, once per process while it is cached, and shared by
 * every delivery that names it. A snapshot that is gone (its pipeline was deleted by retention,
 * so no lease can be granted for it) gives an empty context.
 */
export async function payloadOf(db: Db, job: StageNextJob): Promise<StageNextMessage> {
  const { contextSnapshotId, ...message } = job;
  if (contextSnapshotId === undefined) return message;
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = { entries: new Map(), bytes: 0 }));
  const found = cache.entries.get(contextSnapshotId);
  if (found) {
    cache.entries.delete(contextSnapshotId);
    cache.entries.set(contextSnapshotId, found);
    return { ...message, pipelineContextItems: await found.items };
  }
  const entry = { items: load(db, contextSnapshotId, job.applicationId), bytes: 0 };
  cache.entries.set(contextSnapshotId, entry);
  let items: ContextItem[];
  try {
    items = await entry.items;
  } catch (err) {
    cache.entries.delete(contextSnapshotId);
    throw err;
  }
  if (cache.entries.get(contextSnapshotId) === entry && entry.bytes === 0) {
    entry.bytes = bytesOf(items);
    cache.bytes += entry.bytes;
    for (const [id, e] of cache.entries) {
      if (cache.bytes <= CACHE_BYTES || id === contextSnapshotId) break;
      cache.entries.delete(id);
      cache.bytes -= e.bytes;
    }
  }
  return { ...message, pipelineContextItems: items };
}

async function load(db: Db, id: string, applicationId: number): Promise<ContextItem[]> {
  const json = await readContextSnapshot(sqlOf(db), id, applicationId);
  return json === null ? [] : (JSON.parse(json) as ContextItem[]);
}

function bytesOf(items: readonly ContextItem[]): number {
  let bytes = 0;
  for (const c of items) bytes += 64 + 2 * (c.key.length + (c.value?.length ?? 0) + (c.valueType?.length ?? 0));
  return bytes;
}
