import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { STREAM_HANDLERS, createStream, errorLines, streamProblems, unfinishedCount, unreadyServices } from './support/pipeline-stream.js';
import { ReplicatedPostgres, type PostgresNode } from './support/postgres-replicas.js';

const run = promisify(execFile);

const PIPELINES = 70;
const PACE_MS = 100;
/** Into the stream when the primary goes. */
const FAILOVER_AFTER_MS = 2500;
/**
 * Killed case: from the primary's death to the promotion, as an operator (CloudNativePG, Patroni)
 * takes a moment to notice it. The schedule's tick falls due in between.
 */
const DETECTION_DELAY_MS = 1000;
/**
 * Read-only case: from the promotion to the proxy's re-pointing, as a Kubernetes Service's
 * endpoints follow a promotion only after a moment. Meanwhile new connections still reach the old
 * primary, which refuses their writes.
 */
const REPOINT_DELAY_MS = 1000;
/** Read-only case: how long after the re-pointing a service may still hold a connection to the old primary. */
const OLD_PRIMARY_LEFT_WITHIN_MS = 15_000;
const SCHEDULE = 'failover-tick';
const TICK_SECONDS = 10;
/** The failover starts this long before one of the schedule's ticks, so that the tick falls due while the services cannot write. */
const TICK_LEAD_MS = 100;

type Mode = 'killed' | 'read-only';

interface Failover {
  /** The old primary stopped taking writes: killed, or made read-only. */
  brokeAt: number;
  promotedAt: number;
  repointedAt: number;
}

/**
 * Issue 27, item 3: the primary PostgreSQL fails over to its synchronous standby while pipelines,
 * a schedule and SDK workers run; the services reach the primary through one stable address (a
 * TCP proxy, as a Kubernetes `-rw` Service), which is re-pointed to the promoted standby. Nothing
 * is restarted by hand. Once the old primary is killed (kill -9 of every PostgreSQL process); once
 * it is left running but read-only, so that connections opened before the switch still reach it.
 */
function failoverSuite(mode: Mode, label: string): void {
  const tag = `[postgres-failover ${mode}]`;
  let replicas: ReplicatedPostgres;
  let cluster: Cluster;
  let key: string;
  let applicationId: number;
  let pids: (number | undefined)[];
  let firstTick: number;

  beforeAll(async () => {
    replicas = await ReplicatedPostgres.start(`po_failover_${label}`);
    cluster = await startCluster({
      database: replicas.testDatabase,
      env: { GATEWAY_VISIBILITY_TIMEOUT: '3', DISPATCH_SWEEP_INTERVAL_MS: '200' },
    });
    pids = cluster.services.map((s) => s.pid);
    ({ apiKey: key, applicationId } = await cluster.createApp(`failover-${label}`));
    const schedule = await call(cluster.apiUrl, 'PUT', `/schedules/${SCHEDULE}`, {
      json: {
        kind: 'Interval',
        intervalSeconds: TICK_SECONDS,
        overlapPolicy: 'Allow',
        definition: { name: SCHEDULE, stages: [{ stageName: 'only', stageHandlerName: 'echo', input: 'tick' }] },
      },
      headers: { 'x-api-key': key },
    });
    expect(schedule.status).toBe(201);
    firstTick = Date.parse(schedule.body.nextRunAt as string);
    for (const i of [1, 2]) {
      cluster.startWorker(`worker-${i}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: key,
        PO_INSTANCE_ID: `failover-${label}-${i}`,
        PO_HANDLERS: STREAM_HANDLERS,
        PO_CONCURRENCY: '8',
      });
    }
  }, 120_000);

  afterAll(async () => {
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length) console.log(`${tag} ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`);
    await cluster?.stop().catch((err: unknown) => console.log(`${tag} cluster stop: ${String(err)}`));
    await replicas?.destroy();
  }, 60_000);

  it('completes every pipeline, applies no result twice, loses no acknowledged creation, keeps the schedule firing, with no service restarted', async () => {
    const db = () => replicas.testDatabase.db;
    const headers = { 'x-api-key': key };
    // The stream starts FAILOVER_AFTER_MS before the failover, which starts just before a tick.
    let failAt = firstTick - TICK_LEAD_MS;
    while (failAt - FAILOVER_AFTER_MS < Date.now()) failAt += TICK_SECONDS * 1000;
    await sleep(failAt - FAILOVER_AFTER_MS - Date.now());
    const creating = createStream(cluster, key, label, PIPELINES, PACE_MS);
    creating.catch(() => undefined); // awaited below, unless an earlier step failed
    await sleep(failAt - Date.now());

    const old = replicas.primary;
    const failover: Failover = mode === 'killed' ? await killAndPromote(replicas) : await fenceAndPromote(replicas);
    const { brokeAt, promotedAt, repointedAt } = failover;
    console.log(`${tag} old primary ${mode}; standby promoted ${promotedAt - brokeAt} ms later; proxy re-pointed ${repointedAt - promotedAt} ms after the promotion`);

    // The first creation after the promotion, retried until it is acknowledged (as any client would).
    const probeKey = `${label}-probe`;
    const firstCreate = waitFor('a creation acknowledged after the promotion', async () => {
      const r = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
        json: { idempotencyKey: probeKey, name: probeKey, stages: [{ stageName: 'only', stageHandlerName: 'echo', input: 'probe' }] },
        headers,
      }).catch(() => undefined);
      return r && (r.status === 200 || r.status === 201) ? { at: Date.now(), id: r.body.pipeline.id as number } : undefined;
    }, 60_000, 50);
    // The first stage result the new primary holds that was applied after the promotion.
    const firstResult = waitFor('a stage result applied after the promotion', async () => {
      const [row] = await db().$queryRaw<{ at: Date | null }[]>`
        SELECT min(ended_at) AS at FROM stage_executions WHERE end_reason = 'result' AND ended_at > ${new Date(promotedAt)}`;
      return row?.at ? row.at.getTime() : undefined;
    }, 60_000, 50);
    const oldPrimaryLeft = mode === 'read-only' ? connectionsLeave(replicas, old, repointedAt) : undefined;

    const [created, resultAt] = await Promise.all([firstCreate, firstResult]).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\n${await stuck(cluster, replicas, mode === 'read-only' ? old : undefined)}`);
    });
    const ids = await creating;
    const left = await oldPrimaryLeft;
    const figures = {
      mode,
      promotionMs: promotedAt - brokeAt,
      promotionToFirstCreateMs: created.at - promotedAt,
      promotionToFirstResultMs: resultAt - promotedAt,
      outageToFirstCreateMs: created.at - brokeAt,
      ...(mode === 'read-only'
        ? { repointToFirstCreateMs: created.at - repointedAt, repointToFirstResultMs: resultAt - repointedAt, oldPrimaryLastServiceConnectionGoneMs: left?.goneAfterMs ?? null }
        : {}),
    };
    console.log(`${tag} recovery ${JSON.stringify(figures)}`);

    // Schedule runs keep happening: the tick due during the failover was made late (checked
    // below), and the next one, due after the promotion, fires and completes.
    await waitFor('a run for a tick due after the promotion, its pipeline Completed', async () => {
      const rows = await db().$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM schedule_runs r JOIN pipelines p ON p.id = r.pipeline_id
        WHERE r.scheduled_for > ${new Date(promotedAt)} AND p.status = 'Completed'`;
      return Number(rows[0]!.n) > 0 ? true : undefined;
    }, (TICK_SECONDS + 20) * 1000, 250);
    expect((await call(cluster.apiUrl, 'POST', `/schedules/${SCHEDULE}/pause`, { headers })).status).toBe(200);
    const pausedAt = Date.now();
    console.log(`${tag} ${ids.length} of ${PIPELINES} created; ${await unfinishedCount(cluster)} not finished yet`);

    const problems = await streamProblems(cluster, key, ids, 45_000);
    const acknowledged = [...ids, created.id];
    const [held] = await db().$queryRaw<{ n: bigint; before: bigint }[]>`
      SELECT count(*) AS n, count(*) FILTER (WHERE created_at < ${new Date(brokeAt)}) AS before FROM pipelines WHERE id = ANY(${acknowledged.map(BigInt)}::bigint[])`;
    console.log(`${tag} ${acknowledged.length} creations acknowledged, ${Number(held!.before)} of them by the old primary; the new primary holds ${Number(held!.n)}`);

    // The read-only case exercised what it claims: writes reached the old primary after it turned read-only.
    const refused = mode === 'read-only' ? (readFileSync(old.logFile, 'utf8').match(/in a read-only transaction/g)?.length ?? 0) : 0;
    if (mode === 'read-only') console.log(`${tag} the old primary refused ${refused} writes (25006)`);

    expect({
      created: ids.length,
      acknowledgedHeld: Number(held!.n),
      problems,
      others: await otherPipelineProblems(cluster, ids),
      schedule: await scheduleProblems(cluster, firstTick, pausedAt, promotedAt, tag),
      oldPrimary: left?.remaining ?? [],
      oldPrimaryRefusedWrites: mode === 'read-only' ? refused > 0 : null,
      disabledKeyRefused: await keyCacheHearsNewPrimary(cluster, applicationId, tag),
      restarted: cluster.services.filter((s, i) => !s.running || s.pid !== pids[i]).map((s) => s.name),
      unready: await unreadyServices(cluster),
    }).toEqual({
      created: PIPELINES,
      acknowledgedHeld: acknowledged.length,
      problems: [],
      others: [],
      schedule: [],
      oldPrimary: [],
      oldPrimaryRefusedWrites: mode === 'read-only' ? true : null,
      disabledKeyRefused: true,
      restarted: [],
      unready: [],
    });
  }, 150_000);
}

/** kill -9 of every process of the primary; a moment later the standby promoted, the proxy re-pointed to it. */
async function killAndPromote(replicas: ReplicatedPostgres): Promise<Failover> {
  await replicas.primary.crash();
  const brokeAt = Date.now();
  await sleep(DETECTION_DELAY_MS);
  const { promotedAt } = await replicas.promote();
  replicas.proxy.retarget(replicas.primary.port);
  return { brokeAt, promotedAt, repointedAt: Date.now() };
}

/**
 * The primary made read-only while it runs (it fences itself: writes get 25006 from its next
 * transaction on, sessions already open included), the standby promoted once it replayed
 * everything, and the proxy re-pointed a moment later; the old primary stays up with the
 * connections it had. Fenced before the promotion, not after: a primary still taking writes once
 * its synchronous standby left would hold every commit forever (statement_timeout does not end
 * that wait), and the client with it.
 */
async function fenceAndPromote(replicas: ReplicatedPostgres): Promise<Failover> {
  await ReplicatedPostgres.makeReadOnly(replicas.primary);
  const brokeAt = Date.now();
  await replicas.waitStandbyCaughtUp();
  const { promotedAt } = await replicas.promote();
  await sleep(REPOINT_DELAY_MS);
  replicas.proxy.retarget(replicas.primary.port);
  return { brokeAt, promotedAt, repointedAt: Date.now() };
}

/**
 * Connections to a read-only server are dropped, not reused: polls the old primary until no
 * service holds a connection to the database there, for at most OLD_PRIMARY_LEFT_WITHIN_MS after
 * the re-pointing. Returns when the last one went, or what is still there.
 */
async function connectionsLeave(replicas: ReplicatedPostgres, old: PostgresNode, repointedAt: number): Promise<{ goneAfterMs: number | null; remaining: string[] }> {
  let remaining: string[] = [];
  while (Date.now() - repointedAt < OLD_PRIMARY_LEFT_WITHIN_MS) {
    const rows = await old.query<{ application_name: string; state: string | null; query: string }>(
      `SELECT application_name, state, left(query, 60) AS query FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() ORDER BY application_name`,
      [replicas.database],
    );
    remaining = rows.map((r) => `${r.application_name || '(no name)'} ${r.state}: ${r.query}`);
    if (rows.length === 0) return { goneAfterMs: Date.now() - repointedAt, remaining };
    await sleep(50);
  }
  return { goneAfterMs: null, remaining: [...remaining, `(proxy: ${replicas.proxy.openConnections(old.port)} connections still forwarded to the old primary)`] };
}

/**
 * The API-key cache's LISTEN session followed the failover: a key read once (so cached) and then
 * disabled is refused well within the cache's TTL (10 s), which only the NOTIFY of the new primary
 * can make happen.
 */
async function keyCacheHearsNewPrimary(cluster: Cluster, applicationId: number, tag: string): Promise<boolean> {
  const admin = async (...args: string[]) => JSON.parse((await run(process.execPath, ['services/api-gateway/dist/admin/cli.js', ...args], { env: cluster.env })).stdout) as Record<string, unknown>;
  const other = (await admin('apps', 'keys', 'create', '--app', String(applicationId))) as { keyId: number; apiKey: string };
  const read = () => call(cluster.apiUrl, 'GET', '/pipelines?limit=1', { headers: { 'x-api-key': other.apiKey } }).then((r) => r.status);
  if ((await read()) !== 200) return false;
  await admin('apps', 'keys', 'disable', '--key-id', String(other.keyId));
  const disabledAt = Date.now();
  const refused = await waitFor('the disabled key refused', async () => ((await read()) === 401 ? true : undefined), 3000, 50).catch(() => false);
  console.log(`${tag} a key disabled after the failover: ${refused ? `refused ${Date.now() - disabledAt} ms later` : 'still accepted after 3 s'}`);
  return refused;
}

/** What the services were doing when recovery did not come: their connections on the old primary, their last errors. */
async function stuck(cluster: Cluster, replicas: ReplicatedPostgres, old: PostgresNode | undefined): Promise<string> {
  const lines: string[] = [];
  if (old) {
    const rows = await old
      .query<{ application_name: string; n: number }>(`SELECT application_name, count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 GROUP BY 1 ORDER BY 1`, [replicas.database])
      .catch(() => []);
    lines.push(`connections still on the old primary: ${rows.map((r) => `${r.application_name || '(no name)'} ${r.n}`).join(', ') || 'none'} (proxy: ${replicas.proxy.openConnections(old.port)})`);
  }
  const errors = errorLines(cluster).map((l) => l.replace(/^([\w-]+): .*?"message":"([^"]*)".*?"msg":"([^"]*)".*$/, '$1: $3: $2'));
  const counts = new Map<string, number>();
  for (const e of errors) counts.set(e, (counts.get(e) ?? 0) + 1);
  lines.push(`the services' error lines (${errors.length}): ${[...counts].map(([e, n]) => `${n} × ${e.slice(0, 200)}`).slice(0, 8).join('; ')}`);
  return lines.join('\n');
}

/** The pipelines not in the stream (schedule runs, the probe): each Completed, each stage run and applied once. */
async function otherPipelineProblems(cluster: Cluster, streamIds: number[]): Promise<string[]> {
  const rows = await cluster.database.db.$queryRaw<{ id: bigint; status: string; stage: string; executions: bigint; results: bigint }[]>`
    SELECT p.id, p.status::text AS status, s.status::text AS stage, COUNT(e.id) AS executions,
           COUNT(e.id) FILTER (WHERE e.end_reason = 'result') AS results
    FROM pipelines p JOIN stages s ON s.pipeline_id = p.id LEFT JOIN stage_executions e ON e.stage_id = s.id
    WHERE NOT p.id = ANY(${streamIds.map(BigInt)}::bigint[])
    GROUP BY p.id, s.id ORDER BY p.id`;
  return rows
    .filter((r) => r.status !== 'Completed' || r.stage !== 'Completed' || Number(r.executions) !== 1 || Number(r.results) !== 1)
    .map((r) => `pipeline ${r.id} ${r.status}: stage ${r.stage}, ${r.executions} executions, ${r.results} ended by a result`);
}

/**
 * The schedule's runs: one for every tick from the first to the pause (a tick has at most one, by
 * a unique index), the one due during the failover included; each Created with a Completed
 * pipeline; some made after the promotion.
 */
async function scheduleProblems(cluster: Cluster, firstTick: number, pausedAt: number, promotedAt: number, tag: string): Promise<string[]> {
  const runs = await cluster.database.db.$queryRaw<{ scheduled_for: Date; created_at: Date; status: string; pipeline_status: string | null }[]>`
    SELECT r.scheduled_for, r.created_at, r.status, p.status::text AS pipeline_status
    FROM schedule_runs r LEFT JOIN pipelines p ON p.id = r.pipeline_id ORDER BY r.scheduled_for`;
  const problems: string[] = [];
  const byTick = new Map(runs.map((r) => [r.scheduled_for.getTime(), r]));
  // A tick within a second of the pause may have been skipped by it.
  for (let tick = firstTick; tick < pausedAt - 1000; tick += TICK_SECONDS * 1000) {
    if (!byTick.has(tick)) problems.push(`no run for the tick ${new Date(tick).toISOString()}`);
  }
  for (const r of runs) {
    const tick = r.scheduled_for.getTime();
    if ((tick - firstTick) % (TICK_SECONDS * 1000) !== 0) problems.push(`a run for ${r.scheduled_for.toISOString()}, not a tick`);
    if (r.status !== 'Created' || r.pipeline_status !== 'Completed') problems.push(`run for ${r.scheduled_for.toISOString()}: ${r.status}, pipeline ${r.pipeline_status}`);
  }
  if (!runs.some((r) => r.created_at.getTime() > promotedAt)) problems.push('no run made after the promotion');
  const late = runs.map((r) => `${r.scheduled_for.toISOString().slice(11, 23)} +${r.created_at.getTime() - r.scheduled_for.getTime()} ms`);
  console.log(`${tag} schedule runs (tick, made after): ${late.join(', ')}; promoted at ${new Date(promotedAt).toISOString().slice(11, 23)}`);
  return problems;
}

describe('PostgreSQL primary failover: the primary killed, its synchronous standby promoted', () => {
  failoverSuite('killed', 'killed');
});

describe('PostgreSQL primary failover: the old primary left running read-only', () => {
  failoverSuite('read-only', 'readonly');
});
