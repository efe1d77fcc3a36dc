// How one migration's SQL runs on the server (decision 0115). Used by engine.mjs only.
//
// A migration is one of two kinds, told apart by its statements (comments and literals aside):
// - transactional (every migration Prisma writes): one simple query, so PostgreSQL runs it in one
//   implicit transaction, as Prisma's native engine does. It runs under lock_timeout and is
//   retried whole when a lock could not be had in time (nothing of it stayed).
// - concurrent: only CREATE INDEX CONCURRENTLY / DROP INDEX CONCURRENTLY statements, which cannot
//   run in a transaction block. They run one by one, and each is idempotent: a valid index of that
//   name on that table is kept, an INVALID one (a build that did not finish) is dropped and built
//   again, a DROP of a missing index does nothing. A lone such statement is also what Prisma's CLI
//   accepts (a one-statement simple query is no transaction block).

/** lock_not_available (lock_timeout) and deadlock_detected: the transaction is rolled back whole. */
const LOCK_FAILURES = new Set(['55P03', '40P01']);

const IDENT = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*)`;
const QUALIFIED = String.raw`${IDENT}(?:\s*\.\s*${IDENT})*`;
const OUTSIDE_TRANSACTION = /^(?:CREATE\s+(?:UNIQUE\s+)?INDEX|DROP\s+INDEX)\s+CONCURRENTLY\b/i;
const CREATE = new RegExp(String.raw`^CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+(?:IF\s+NOT\s+EXISTS\s+)?(${IDENT})\s+ON\s+(?:ONLY\s+)?(${QUALIFIED})`, 'i');
const DROP = new RegExp(String.raw`^DROP\s+INDEX\s+CONCURRENTLY\s+(?:IF\s+EXISTS\s+)?(${QUALIFIED})\s*(?:CASCADE|RESTRICT)?\s*$`, 'i');

const unquote = (ident) => (ident.startsWith('"') ? ident.slice(1, -1).replaceAll('""', '"') : ident.toLowerCase());

/**
 * The statements of a script, split on top-level semicolons: `sql` as written, `code` with the
 * comments blanked (for recognising a statement). Knows quotes, E'' escapes, "identifiers",
 * dollar quotes and nested block comments, so 'a;b' and DO $$ … $$ stay whole.
 */
export function splitStatements(script) {
  const statements = [];
  let start = 0;
  let code = '';
  let i = 0;
  const push = (end) => {
    if (code.trim()) statements.push({ sql: script.slice(start, end).trim(), code: code.trim().replace(/\s+/g, ' ') });
    start = end + 1;
    code = '';
  };
  while (i < script.length) {
    const c = script[i];
    const rest = script.slice(i, i + 2);
    let end = i + 1;
    if (rest === '--') {
      end = script.indexOf('\n', i);
      end = end < 0 ? script.length : end;
      code += ' ';
      i = end;
      continue;
    }
    if (rest === '/*') {
      let depth = 1;
      for (end = i + 2; end < script.length && depth > 0; ) {
        const mark = script.slice(end, end + 2);
        depth += mark === '/*' ? 1 : mark === '*/' ? -1 : 0;
        end += mark === '/*' || mark === '*/' ? 2 : 1;
      }
      code += ' ';
      i = end;
      continue;
    }
    if (c === "'" || c === '"') {
      const escapes = c === "'" && /[Ee]/.test(script[i - 1] ?? '') && !/[A-Za-z0-9_$]/.test(script[i - 2] ?? '');
      for (end = i + 1; end < script.length; end += 1) {
        if (escapes && script[end] === '\\') end += 1;
        else if (script[end] === c && script[end + 1] === c) end += 1;
        else if (script[end] === c) break;
      }
      end += 1;
    } else if (c === '$' && !/[A-Za-z0-9_$]/.test(script[i - 1] ?? '')) {
      const tag = /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(script.slice(i));
      if (tag) {
        const close = script.indexOf(tag[0], i + tag[0].length);
        end = close < 0 ? script.length : close + tag[0].length;
      }
    } else if (c === ';') {
      push(i);
      i += 1;
      continue;
    }
    code += script.slice(i, end);
    i = end;
  }
  push(script.length);
  return statements;
}

/**
 * `{ kind: 'transaction' }` or `{ kind: 'concurrent', steps }`. Throws for a script that mixes
 * the two (PostgreSQL would refuse it half-way) or names no index (it could not be re-run).
 */
export function planScript(script) {
  const statements = splitStatements(script);
  const outside = statements.filter((s) => OUTSIDE_TRANSACTION.test(s.code));
  if (outside.length === 0) return { kind: 'transaction' };
  if (outside.length < statements.length) {
    throw new Error(
      "it mixes CREATE/DROP INDEX CONCURRENTLY with other statements, and CONCURRENTLY cannot run inside the migration's transaction: put the CONCURRENTLY statements in a migration of their own",
    );
  }
  const steps = outside.map((s) => {
    const create = CREATE.exec(s.code);
    if (create) return { sql: s.sql, create: { index: unquote(create[1]), table: create[2] } };
    const drop = DROP.exec(s.code);
    if (drop) return { sql: s.sql, drop: { index: drop[1] } };
    throw new Error(`cannot tell which index "${s.code.slice(0, 80)}" is about: name exactly one index (and its table)`);
  });
  return { kind: 'concurrent', steps };
}

/** Milliseconds to wait before attempt `attempt + 1`: 1 s, 2 s, 4 s … at most 30 s. */
export const lockRetryDelay = (attempt) => Math.min(1000 * 2 ** (attempt - 1), 30_000);

/**
 * Runs `script` on `client` (a pg.Client of its own; the caller releases it).
 * options: lockTimeoutMs (0: none), lockRetries, log(line), name (for the log), sleep(ms).
 * A transactional script whose lock failures outlast the retries throws with `lockRetriesExhausted`.
 */
export async function runScript(client, script, options) {
  const plan = planScript(script);
  if (plan.kind === 'concurrent') return runConcurrently(client, plan.steps, options);
  return runInTransaction(client, script, options);
}

async function runInTransaction(client, script, { lockTimeoutMs, lockRetries, log, name, sleep }) {
  // Session-level, then reset: the engine's own bookkeeping on this connection keeps the server's setting.
  await client.query(`SET lock_timeout = ${Number(lockTimeoutMs)}`);
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await client.query(script);
        return;
      } catch (err) {
        // A script with its own BEGIN leaves the session in the failed block: leave it (a no-op otherwise).
        await client.query('ROLLBACK').catch(() => undefined);
        if (!LOCK_FAILURES.has(err?.code)) throw err;
        if (attempt > lockRetries) {
          err.lockRetriesExhausted = attempt;
          throw err;
        }
        const delay = lockRetryDelay(attempt);
        const why = err.code === '55P03' ? `could not take a lock within ${lockTimeoutMs} ms` : 'was chosen as a deadlock victim';
        log(`${name} ${why} (attempt ${attempt} of ${lockRetries + 1}); rolled back, retrying in ${delay / 1000} s`);
        await sleep(delay);
      }
    }
  } finally {
    await client.query('RESET lock_timeout').catch(() => undefined);
  }
}

async function runConcurrently(client, steps, { log, name }) {
  for (const step of steps) {
    if (step.create) {
      const { index, table } = step.create;
      const { rows } = await client.query(
        `SELECT i.indisvalid AS valid, format('%I.%I', n.nspname, c.relname) AS qualified
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.relname = $1 AND i.indrelid = to_regclass($2)`,
        [index, table],
      );
      const existing = rows[0];
      if (existing?.valid) {
        log(`${name}: index ${existing.qualified} exists and is valid; kept`);
        continue;
      }
      if (existing) {
        log(`${name}: index ${existing.qualified} is INVALID (an earlier build did not finish); dropping it to build it again`);
        await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${existing.qualified}`);
      }
    } else {
      const { rows } = await client.query('SELECT to_regclass($1) IS NOT NULL AS present', [step.drop.index]);
      if (!rows[0].present) continue;
    }
    await client.query(step.sql);
  }
}
