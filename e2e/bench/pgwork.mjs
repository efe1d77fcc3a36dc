// PostgreSQL work of a bench phase: statements (pg_stat_statements, when the extension can be
// created) and transactions (pg_stat_database) in the phase's database, without the bench's own
// queries: those go through benchDb(), which tags them with a leading comment and counts them.
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { withAdmin } from './cluster.mjs';

export const TAG = '/* po-bench */';

/** A client on the bench database whose every query is tagged (and counted). */
export async function benchDb(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const db = {
    queries: 0,
    async query(sql, params) {
      db.queries++;
      return client.query(`${TAG} ${sql}`, params);
    },
    end: () => client.end(),
  };
  db.backendPid = (await db.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  return db;
}

const xacts = (name) =>
  withAdmin(async (a) => {
    const { rows } = await a.query(
      'SELECT (xact_commit + xact_rollback)::bigint AS n FROM pg_stat_database WHERE datname = $1',
      [name],
    );
    return Number(rows[0]?.n ?? 0);
  });

/**
 * Resets the counters of the phase's database; call just before the phase starts. `db` is the
 * bench's tagged client on that database.
 */
export async function startPgWork(db, databaseName) {
  let statements = true;
  try {
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await db.query(
      'SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)',
    );
  } catch (err) {
    statements = false;
    console.error(
      `bench: pg_stat_statements unavailable (${err.message}); statement figures are null`,
    );
  }
  const xact0 = await xacts(databaseName);
  const queries0 = db.queries;
  return {
    /**
     * Call once the services have stopped. Closes `db` (so its own transactions are counted and
     * subtracted exactly), waits until no backend is left on the database (their statistics are
     * flushed when they exit), then reads the counters. units: what to divide by (stages or
     * pipelines). Writes the top 15 statements by total time to reportFile.
     */
    async finish({ url, units, reportFile }) {
      const own = db.queries - queries0;
      await db.end();
      for (let i = 0; i < 100; i++) {
        const { rows } = await withAdmin((a) =>
          a.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'",
            [databaseName],
          ),
        );
        if (rows[0].n === 0) break;
        await sleep(100);
      }
      const transactions = (await xacts(databaseName)) - xact0 - own;
      const out = {
        transactions,
        transactionsPerUnit: units > 0 ? +(transactions / units).toFixed(2) : null,
        statements: null,
        statementsPerUnit: null,
        transactionControlPerUnit: null,
        execMsPerUnit: null,
        plansPerUnit: null,
        planMsPerUnit: null,
        topStatementsFile: null,
      };
      if (!statements) return out;
      const reader = await benchDb(url);
      try {
        const mine = `dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '${TAG}%'`;
        const { rows: sums } = await reader.query(
          `SELECT coalesce(sum(calls), 0)::bigint AS calls, coalesce(sum(total_exec_time), 0)::float AS ms,
                  coalesce(sum(plans), 0)::bigint AS plans, coalesce(sum(total_plan_time), 0)::float AS plan_ms,
                  coalesce(sum(calls) FILTER (WHERE query ~* '^\\s*(BEGIN|COMMIT|ROLLBACK|START|SAVEPOINT|RELEASE)'), 0)::bigint AS tx
           FROM pg_stat_statements WHERE ${mine}`,
        );
        const { rows: top } = await reader.query(
          `SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 200) AS query, calls::bigint AS calls, plans::bigint AS plans, total_plan_time::float AS plan_ms, rows::bigint AS rows, total_exec_time::float AS total_ms, mean_exec_time::float AS mean_ms
           FROM pg_stat_statements WHERE ${mine} ORDER BY total_exec_time + total_plan_time DESC LIMIT 15`,
        );
        out.statements = Number(sums[0].calls);
        out.statementsPerUnit = units > 0 ? +(out.statements / units).toFixed(2) : null;
        out.transactionControlPerUnit = units > 0 ? +(Number(sums[0].tx) / units).toFixed(2) : null;
        out.execMsPerUnit = units > 0 ? +(sums[0].ms / units).toFixed(3) : null;
        out.plansPerUnit = units > 0 ? +(Number(sums[0].plans) / units).toFixed(3) : null;
        out.planMsPerUnit = units > 0 ? +(sums[0].plan_ms / units).toFixed(3) : null;
        const lines = top.map(
          (r, i) =>
            `${String(i + 1).padStart(2)}  ${String(r.calls).padStart(8)} calls  ${String(r.plans).padStart(7)} plans ${r.plan_ms.toFixed(1).padStart(7)} ms  ${r.total_ms.toFixed(1).padStart(10)} ms total  ${r.mean_ms.toFixed(3).padStart(8)} ms mean  ${(Number(r.rows) / Math.max(1, Number(r.calls))).toFixed(1).padStart(7)} rows/call  ${r.query}`,
        );
        writeFileSync(
          reportFile,
          `# top ${top.length} statements by total_exec_time + total_plan_time (${out.statements} statements, of which ${sums[0].tx} BEGIN/COMMIT/…; ${units} units)\n${lines.join('\n')}\n`,
        );
        out.topStatementsFile = reportFile;
      } finally {
        await reader.end();
      }
      return out;
    },
  };
}
