// The PostgreSQL plans of the hot-path statements (declared with `statement()` in libs/db) against
// a given database, so that docs/performance.md can show that no sweep, dispatch or lookup
// degrades as history grows: run it on history templates of different sizes (history.mjs builds
// them, `po_bench_hist_<N>_<hash>`) and compare. Not a test: it asserts nothing.
//
//   node e2e/bench/explain.mjs <database-name>      (after `npx turbo run build --filter=@po/db`)
//
// Each statement runs as the services run it: BEGIN; plan_cache_mode forced to the plan it gets
// in production (generic for named statements, which PostgreSQL switches to after five runs;
// custom for those declared `{ plan: 'custom' }`); `enable_seqscan = off` and no parallel workers for the engine
// transaction's statements (the `engine_` statements of passes.ts, pass-contexts.ts and pass-slots.ts, `keyLookups`); PREPARE; EXPLAIN (ANALYZE, BUFFERS,
// COSTS OFF, TIMING OFF, SUMMARY ON) EXECUTE with parameters picked from the database (newest
// pipelines and their stages, a finished pipeline, a bound idempotency key, an API key, …);
// ROLLBACK. Nothing written stays, but sequences advance (nextval is not transactional), rolled
// back rows are dead tuples until vacuum and row locks are held for the moment of the statement:
// point it at a copy of a benchmark database, not at a live one. A statement whose ANALYZE fails
// is shown with a plain EXPLAIN and the error. Where the database has no fitting row (a
// history-only database has no Running stage, no worker session), parameters that match nothing
// are used and the block says so: the plan still shows the access path.
//
// Prints one block per statement (name, plan mode, rows, time, plan) and, last, one JSON line:
// {"metric":"explain", database, pipelines, statements (distinct statements explained), plans
// (blocks: the set-based engine statements twice, over 1 and 64 pipelines), seqScans: [blocks
// with a sequential scan of pipelines, stages, stage_executions, api_keys or idempotency_keys],
// wholeIndexScans: [index scans of those tables with no Index Cond on the index's leading
// column: they read the whole index unless a LIMIT stops them], otherSeqScans: [sequential scans
// of any other table: small or empty in this database, or not indexed for the statement],
// notAnalyzed: [blocks shown by a plain EXPLAIN], failed: [no plan at all; exit code 1],
// notExplained: [declared statements not covered here]}. The full text goes to
// <BENCH_REPORT_DIR or a new temporary directory>/explain.txt (path on stderr).
//
// Environment: TEST_DATABASE_URL (admin connection; its host, port and user are used)
// [postgresql://postgres@127.0.0.1:5432/postgres], BENCH_REPORT_DIR.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { declaredStatements } from '@po/db';
import { databaseUrl } from './cluster.mjs';

const HOT_TABLES = ['pipelines', 'stages', 'stage_executions', 'api_keys', 'idempotency_keys'];
const SEQ_SCAN = new RegExp(`Seq Scan on (${HOT_TABLES.join('|')})\\b`);
const INDEX_SCAN =
  /^\s*(?:->\s+)?(?:Index (?:Only )?Scan (?:Backward )?using (\S+) on |Bitmap Index Scan on (\S+))/;
const ANY_SEQ_SCAN = /Seq Scan on (\S+)/;
const TERMINAL = ['Completed', 'Failed', 'Cancelled'];
const NO_MATCH_HASH = '0'.repeat(64);
const NIL_UUID = '00000000-0000-0000-0000-000000000000';
/** The statements of the engine's transaction (sql.ts `keyLookups`): every `engine_` statement except the pool's lookup. */
const NOT_IN_ENGINE_TX = new Set(['engine_stage_pipelines']);

const name = process.argv[2];
if (!name || !/^[A-Za-z0-9_]+$/.test(name)) {
  console.error('usage: node e2e/bench/explain.mjs <database-name>');
  process.exit(2);
}

/** An SQL literal of a parameter value as pg would send it (arrays as array literals). */
function literal(c, v) {
  if (v === null || v === undefined) return 'NULL';
  if (Array.isArray(v)) {
    const element = (x) =>
      x === null || x === undefined
        ? 'NULL'
        : `"${(x instanceof Date ? x.toISOString() : String(x)).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
    return c.escapeLiteral(`{${v.map(element).join(',')}}`);
  }
  return c.escapeLiteral(v instanceof Date ? v.toISOString() : String(v));
}

const rowsOf = async (c, text, params = []) => (await c.query(text, params)).rows;
const first = async (c, text, params = []) => (await rowsOf(c, text, params))[0];

/** Realistic parameters, each found by key or a short index walk (cheap on a big history too). */
async function pick(c) {
  const notes = [];
  const newest = await rowsOf(
    c,
    'SELECT p.id::text AS id, p.application_id, p.status::text AS status FROM pipelines p ORDER BY p.id DESC LIMIT 64',
  );
  const appRow =
    newest[0] ??
    (await first(c, 'SELECT id AS application_id FROM applications ORDER BY id LIMIT 1'));
  const app = appRow?.application_id ?? 0;
  if (newest.length === 0) notes.push('no pipelines: pipeline and stage ids match nothing');
  const pipelines =
    newest.length > 0 ? newest : [{ id: '0', application_id: app, status: 'Running' }];
  const terminal =
    (
      await first(
        c,
        `SELECT p.id::text AS id FROM pipelines p WHERE p.status::text = ANY($1) ORDER BY p.id LIMIT 1`,
        [TERMINAL],
      )
    )?.id ?? pipelines[0].id;

  const stages = await rowsOf(
    c,
    `SELECT s.id::text AS id, s.pipeline_id::text AS pipeline_id, s.application_id, s.position, s.status::text AS status,
            s.current_execution_id::text AS current_execution_id, s.options
     FROM stages s WHERE s.pipeline_id = ANY($1::bigint[]) ORDER BY s.pipeline_id, s.position`,
    [pipelines.map((p) => p.id)],
  );
  const byPipeline = new Map(pipelines.map((p) => [p.id, []]));
  for (const s of stages) byPipeline.get(s.pipeline_id)?.push(s);
  // One stage per pipeline, as a pass writes it: the last with an execution, else the last.
  const chosen = pipelines.map((p) => {
    const list = byPipeline.get(p.id);
    const s = list.findLast((x) => x.current_execution_id !== null) ?? list.at(-1);
    return (
      s ?? {
        id: '0',
        pipeline_id: p.id,
        application_id: p.application_id,
        position: -1,
        status: 'Pending',
        current_execution_id: null,
      }
    );
  });
  const nextPosition = new Map(
    pipelines.map((p) => [p.id, (byPipeline.get(p.id).at(-1)?.position ?? -1) + 1]),
  );
  const options = stages[0]?.options ?? { timeOut: null };
  const withExecution = chosen.find((s) => s.current_execution_id !== null);
  if (!withExecution)
    notes.push(
      'no stage with an execution among the newest pipelines: execution ids match nothing',
    );

  const session = await first(
    c,
    'SELECT token_hash, worker_id, application_id FROM worker_sessions WHERE superseded_at IS NULL AND expires_at > now() LIMIT 1',
  );
  const worker =
    session?.worker_id ??
    (await first(c, 'SELECT id FROM workers ORDER BY created_at DESC LIMIT 1'))?.id ??
    'no-worker';
  if (!session) notes.push('no live worker session: the session token hash matches nothing');

  const leaseTarget = async (status) => {
    const row = await first(
      c,
      `SELECT id::text AS id, current_execution_id::text AS execution_id FROM stages
       WHERE application_id = $1 AND status = $2::"StageStatus" AND current_execution_id IS NOT NULL LIMIT 1`,
      [session?.application_id ?? app, status],
    );
    if (row) return { ...row, note: `a ${status} stage` };
    return {
      id: withExecution?.id ?? chosen[0].id,
      execution_id: withExecution?.current_execution_id ?? NIL_UUID,
      note: `no ${status} stage: a stage and execution from history that match no row`,
    };
  };

  const apiKey = await first(c, 'SELECT key_hash FROM api_keys ORDER BY id DESC LIMIT 1');
  if (!apiKey) notes.push('no API key: the key hash matches nothing');

  let binding;
  const keyed = await first(
    c,
    'SELECT p.application_id, p.idempotency_key AS key FROM pipelines p WHERE p.idempotency_key IS NOT NULL ORDER BY p.id DESC LIMIT 1',
  );
  if (keyed)
    binding = await first(
      c,
      'SELECT application_id, key FROM idempotency_keys WHERE application_id = $1 AND key = $2',
      [keyed.application_id, keyed.key],
    );
  binding ??= await first(c, 'SELECT application_id, key FROM idempotency_keys LIMIT 1');
  if (!binding) notes.push('no idempotency binding: the key matches nothing');

  return {
    notes,
    app,
    pipelines,
    terminal,
    chosen,
    nextPosition,
    options,
    stage: withExecution?.id ?? chosen[0].id,
    tokenHash: session?.token_hash ?? NO_MATCH_HASH,
    worker,
    acquire: await leaseTarget('Pending'),
    renew: await leaseTarget('Running'),
    keyHash: apiKey?.key_hash ?? NO_MATCH_HASH,
    binding: binding ?? { application_id: app, key: 'no-such-key' },
  };
}

/** The explained cases: statement name, a label when it is explained more than once, parameters. */
function cases(p) {
  const now = new Date();
  const sizes = [1, 64].filter((n, i) => i === 0 || p.pipelines.length > 1);
  const set = (n) => ({
    label: `×${Math.min(n, p.pipelines.length)}`,
    pipelines: p.pipelines.slice(0, n),
    stages: p.chosen.slice(0, n),
  });
  const stageItem = (i) => ({
    name: `explain-${i}`,
    handlerName: 'work',
    description: null,
    input: `input ${i}`,
    options: p.options,
    policies: null,
    isEvent: false,
    spanId: randomBytes(8).toString('hex'),
  });
  const creation = (applicationId, key) => [
    applicationId,
    'explain',
    randomBytes(16).toString('hex'),
    null,
    key,
    randomBytes(32).toString('hex'),
    null,
    now.toISOString(),
    JSON.stringify([0, 1, 2, 3, 4].map(stageItem)),
    JSON.stringify([
      { key: 'a', value: '1', valueType: 'number', isSensitive: false },
      { key: 'b', value: 'x', valueType: null, isSensitive: true },
    ]),
    JSON.stringify([
      { key: 'team', value: 'bench' },
      { key: 'kind', value: 'explain' },
    ]),
    null, // rerun_of: not a rerun
  ];
  const out = [];
  const add = (statement, params, extra = {}) => out.push({ statement, params, ...extra });

  for (const n of sizes) {
    const { label, pipelines, stages } = set(n);
    const ids = pipelines.map((x) => x.id);
    const stageIds = stages.map((s) => s.id);
    const live = stages.filter((s) => s.current_execution_id !== null);
    const note = `the ${pipelines.length} newest pipeline(s)`;
    add('engine_lock_pipelines', [ids], { label, note });
    add('engine_lock_pipelines_skip', [ids], { label, note });
    add('engine_read_stages', [ids], { label, note });
    add('engine_stage_pipelines', [stageIds], { label, note: `one stage of each of ${note}` });
    add('engine_read_context', [ids], { label, note });
    add(
      'engine_write_pass',
      [
        now,
        stageIds,
        stages.map((s) => s.status),
        stages.map((s) => s.status),
        stages.map(() => true),
        stages.map(() => 'explain output'),
        stages.map(() => now),
        stages.map(() => 0),
        stages.map(() => 0),
        stages.map(() => null),
        stages.map(() => null),
        stages.map(() => null),
        stages.map(() => null),
        stages.map(() => randomUUID()),
        live.map((s) => s.current_execution_id),
        live.map(() => 'result'),
        stages.map(() => randomUUID()),
        stageIds,
        stages.map((s) => s.application_id),
        ids,
        pipelines.map((x) => x.status),
        pipelines.map(() => null),
        pipelines.map(() => null),
        stageIds,
        stages.map((s) => s.pipeline_id),
        stages.map(() => 'explain'),
        stages.map(() => 'Information'),
        stages.map(() => now),
        stageIds,
        ids,
      ],
      {
        label,
        note: `one stage of each of ${note} rewritten, its execution ended, a new one started, a log line each`,
      },
    );
    add('engine_delete_context', [ids, ids.map(() => 'a')], { label, note });
    add(
      'engine_upsert_context',
      [
        ids,
        ids.map(() => 'explain'),
        ids.map(() => 'v'),
        ids.map(() => null),
        ids.map(() => false),
        now,
      ],
      {
        label,
        note,
      },
    );
    add(
      'engine_insert_stages',
      [
        ids,
        pipelines.map((x) => x.application_id),
        pipelines.map((x) => p.nextPosition.get(x.id)),
        ids.map(() => 'explain'),
        ids.map(() => 'work'),
        ids.map(() => null),
        ids.map(() => ''),
        ids.map(() => JSON.stringify(p.options)),
        ids.map(() => null),
        ids.map(() => false),
        ids.map(() => randomBytes(8).toString('hex')),
        now,
      ],
      { label, note: `a stage appended to each of ${note}` },
    );
  }
  add('engine_now', []);
  add('engine_lock_application', [p.app]);
  add('engine_active_stages', [p.app], { note: 'the newest pipeline’s application' });
  add('engine_oldest_throttled', [p.app, 64], {
    note: 'the newest pipeline’s application, 64 free slots',
  });

  // Sweeper (pipeline-service dispatcher/sweeper.ts): BATCH 200, grace 1000 ms, pages of 500 after 30 s.
  add('sweep_expired_executions', [200]);
  add('sweep_due_pipelines', [1000, 200]);
  add('sweep_throttled_pipelines', [200]);
  add('sweep_waiting_executions', [30, new Date(0), NIL_UUID, 500], {
    note: 'from the start of the walk',
  });

  add('lease_acquire', [p.tokenHash, p.acquire.id, p.acquire.execution_id, p.worker, 30], {
    note: p.acquire.note,
  });
  add('lease_renew', [p.tokenHash, p.renew.id, p.renew.execution_id, p.worker, 30], {
    note: p.renew.note,
  });
  add('result_intake', [p.tokenHash, p.stage], { note: 'a stage of the newest pipelines' });
  add('worker_session_current', [p.tokenHash], { note: 'heartbeat, events, shutdown' });
  add('stage_trace_facts', [p.stage], { note: 'a stage of the newest pipelines' });

  add('pipeline_create', creation(p.app, `explain-${randomUUID()}`), {
    label: 'new key',
    note: 'a new idempotency key: binding, pipeline, 5 stages, 2 context items, 2 keywords',
  });
  add('pipeline_create', creation(p.binding.application_id, p.binding.key), {
    label: 'bound key',
    note: 'a key already bound: nothing inserted',
  });
  const newest = p.pipelines[0];
  add('pipeline_lock_for_append', [newest.id], { note: 'the newest pipeline' });
  add('pipeline_stage_names', [newest.id], { note: 'the newest pipeline' });
  add(
    'pipeline_append_stages',
    [newest.id, JSON.stringify([stageItem(0)]), now.toISOString(), p.nextPosition.get(newest.id)],
    {
      note: 'one stage appended to the newest pipeline',
    },
  );
  add('pipeline_read', [newest.id], { label: 'newest', note: 'the newest pipeline' });
  add('pipeline_read', [p.terminal], { label: 'history', note: 'the oldest finished pipeline' });
  add('pipeline_read_by_key', [p.binding.application_id, p.binding.key], {
    note: 'a bound idempotency key',
  });
  add('api_key_by_hash', [p.keyHash], { note: 'the newest API key' });
  return out;
}

const topRows = (plan) => /actual rows=(\d+)/.exec(plan[0] ?? '')?.[1] ?? null;
const summary = (plan, label) => {
  const line = plan.find((l) => l.trim().startsWith(`${label}:`));
  return line
    ? line
        .trim()
        .slice(label.length + 1)
        .trim()
    : null;
};

/** Each index of the hot tables: name → its table and leading column (null: an expression). */
async function indexes(c) {
  const rows = await rowsOf(
    c,
    `SELECT i.relname AS index, t.relname AS table, a.attname AS leading
     FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
     LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0] AND x.indkey[0] <> 0
     WHERE t.relname = ANY($1) AND t.relnamespace = to_regnamespace(current_schema())`,
    [HOT_TABLES],
  );
  return new Map(rows.map((r) => [r.index, { table: r.table, leading: r.leading }]));
}

/**
 * Index scans of the hot tables that read the index whole (unless a LIMIT stops them): no Index
 * Cond, or one that does not constrain the index's leading column. A node's detail lines come
 * before its children.
 */
function wholeIndexScans(plan, known) {
  const found = [];
  plan.forEach((line, i) => {
    const m = INDEX_SCAN.exec(line);
    const index = known.get(m?.[1] ?? m?.[2]);
    if (!index) return;
    const indent = line.length - line.trimStart().length;
    let cond = null;
    for (const next of plan.slice(i + 1)) {
      const text = next.trimStart();
      if (text.startsWith('->') || next.length - text.length <= indent) break;
      if (text.startsWith('Index Cond:')) cond = text;
    }
    const leads =
      cond !== null && (index.leading === null || new RegExp(`\\b${index.leading}\\b`).test(cond));
    if (!leads) found.push(`${index.table} (${m[1] ?? m[2]})`);
  });
  return found;
}

async function explain(c, { statement, params }, declared) {
  const s = declared.get(statement);
  if (!s) throw new Error(`statement ${statement} is not declared (renamed?)`);
  const engine = statement.startsWith('engine_') && !NOT_IN_ENGINE_TX.has(statement);
  const mode = s.custom ? 'force_custom_plan' : 'force_generic_plan';
  const args = params.length > 0 ? `(${params.map((v) => literal(c, v)).join(', ')})` : '';
  const run = async (options) => {
    await c.query('BEGIN');
    try {
      await c.query(`SET LOCAL plan_cache_mode = ${mode}`);
      if (engine) await c.query('SET LOCAL enable_seqscan = off; SET LOCAL max_parallel_workers_per_gather = 0');
      await c.query(`PREPARE explain_stmt AS ${s.text}`);
      const { rows } = await c.query(`EXPLAIN (${options}) EXECUTE explain_stmt${args}`);
      return rows.map((r) => r['QUERY PLAN']);
    } finally {
      await c.query('ROLLBACK');
      await c.query('DEALLOCATE ALL');
    }
  };
  const settings = `${s.custom ? 'custom' : 'generic'} plan${engine ? ', enable_seqscan off, no parallel workers' : ''}`;
  try {
    return {
      settings,
      analyzed: true,
      plan: await run('ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY ON'),
    };
  } catch (err) {
    return {
      settings,
      analyzed: false,
      error: err.message,
      plan: await run('COSTS OFF, SUMMARY ON'),
    };
  }
}

const declared = declaredStatements();
const url = databaseUrl(name);
const client = new pg.Client({ connectionString: url });
await client.connect();
const lines = [];
const print = (line = '') => {
  lines.push(line);
  console.log(line);
};
const seqScans = [];
const otherSeqScans = [];
const wholeIndex = [];
const failed = [];
const notAnalyzed = [];
const explained = new Set();
let plans = 0;
try {
  // Never wait long on a lock a live process holds; never run away.
  await client.query("SET lock_timeout = '5s'");
  await client.query("SET statement_timeout = '120s'");
  const pipelines = Number((await first(client, 'SELECT count(*) AS n FROM pipelines')).n);
  const { server_version: version } = await first(client, 'SHOW server_version');
  const picked = await pick(client);
  const known = await indexes(client);
  print(
    `# explain: database ${name}, PostgreSQL ${version}, ${pipelines} pipelines, ${new Date().toISOString()}`,
  );
  for (const note of picked.notes) print(`# note: ${note}`);
  const list = cases(picked);
  for (const item of list) {
    const title = item.label ? `${item.statement} (${item.label})` : item.statement;
    print();
    print(`=== ${title}`);
    let result;
    try {
      result = await explain(client, item, declared);
    } catch (err) {
      failed.push(title);
      print(`error: ${err.message}`);
      continue;
    }
    explained.add(item.statement);
    plans += 1;
    const { plan } = result;
    print(`plan: ${result.settings}${result.analyzed ? '' : ', NOT ANALYZED'}`);
    if (item.note) print(`parameters: ${item.note}`);
    if (result.analyzed) {
      print(
        `rows: ${topRows(plan)}   planning: ${summary(plan, 'Planning Time')}   execution: ${summary(plan, 'Execution Time')}`,
      );
    } else {
      notAnalyzed.push(title);
      print(`analyze failed: ${result.error}`);
    }
    const tables = [...new Set(plan.map((l) => ANY_SEQ_SCAN.exec(l)?.[1]).filter(Boolean))];
    if (tables.length > 0) print(`seq scans: ${tables.join(', ')}`);
    const others = tables.filter((t) => !HOT_TABLES.includes(t));
    if (others.length > 0) otherSeqScans.push(`${title}: ${others.join(', ')}`);
    for (const line of plan) print(line);
    if (plan.some((l) => SEQ_SCAN.test(l))) seqScans.push(title);
    const scans = [...new Set(wholeIndexScans(plan, known))];
    if (scans.length > 0) wholeIndex.push(`${title}: ${scans.join(', ')}`);
  }
  const covered = new Set(list.map((x) => x.statement));
  const notExplained = [...declared.keys()].filter((n) => !covered.has(n));
  print();
  const result = {
    metric: 'explain',
    database: name,
    pipelines,
    statements: explained.size,
    plans,
    seqScans,
    wholeIndexScans: wholeIndex,
    otherSeqScans,
    notAnalyzed,
    failed,
    notExplained,
  };
  print(JSON.stringify(result));
  const dir = process.env.BENCH_REPORT_DIR ?? mkdtempSync(join(tmpdir(), 'po-bench-report-'));
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'explain.txt');
  writeFileSync(file, `${lines.join('\n')}\n`);
  console.error(`explain: full text in ${file}`);
  if (failed.length > 0) process.exitCode = 1;
} finally {
  await client.end();
}
