// Plans of the statements sql.ts runs (decisions 0101, 0111): named statements on the generic plan
// the pools force; `custom` ones planned for their parameters on the pool, and under the caller's
// setting inside a caller's transaction.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { sqlOf, statement } from './index.js';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

// The plan_cache_mode each statement is planned under. (EXPLAIN cannot tell: PostgreSQL plans the
// statement it explains for the values bound to EXPLAIN, whatever the mode.)
const MODE = "SELECT current_setting('plan_cache_mode') AS mode WHERE $1::int IS NOT NULL";
const modeNamed = statement('test_plan_mode_named', MODE);
const modeCustom = statement('test_plan_mode_custom', MODE, { plan: 'custom' });
const mode = (rows: { mode: string }[]) => rows[0]?.mode;

describe('statement plans (decisions 0101, 0111)', () => {
  it('a named statement runs under the forced generic plan', async () => {
    expect(mode(await sqlOf(database.db).query<{ mode: string }>(modeNamed, [1]))).toBe('force_generic_plan');
  });

  it('a custom statement on the pool is planned for its parameters, not on the forced generic plan', async () => {
    expect(mode(await sqlOf(database.db).query<{ mode: string }>(modeCustom, [1]))).toBe('force_custom_plan');
    // The setting was the transaction's alone: the connection it ran on is back to generic plans.
    const again = await Promise.all(Array.from({ length: 12 }, () => sqlOf(database.db).query<{ mode: string }>(modeNamed, [1])));
    expect(new Set(again.map(mode))).toEqual(new Set(['force_generic_plan']));
  });

  it("inside a caller's transaction a custom statement follows that transaction's setting", async () => {
    expect(await sqlOf(database.db).transaction(async (tx) => mode(await tx.query<{ mode: string }>(modeCustom, [1])), { keyLookups: true })).toBe('force_generic_plan');
  });
});
