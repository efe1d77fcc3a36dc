import { statement, type Queryable } from '../sql.js';

/**
 * The key that signs page cursors (decision 0089): one row, drawn by PostgreSQL when the migration
 * created the table, so every replica shares it with no configuration. Should the row be missing
 * (deleted by hand to rotate the key), the first reader draws a new one; concurrent readers agree
 * on it through the primary key.
 */
const READ = statement(
  'cursor_secret_read',
  `WITH drawn AS (
     INSERT INTO cursor_secrets (id) VALUES (1) ON CONFLICT (id) DO NOTHING RETURNING secret
   )
   SELECT secret FROM drawn UNION ALL SELECT secret FROM cursor_secrets WHERE id = 1`,
);

export async function readCursorSecret(db: Queryable): Promise<string> {
  const [row] = await db.query<{ secret: string }>(READ);
  if (!row) throw new Error('cursor_secrets has no row 1');
  return row.secret;
}
