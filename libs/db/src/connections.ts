import type { SqlDriverAdapter, SqlDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type pg from 'pg';
import { quoteLiteral } from './sql.js';

/** read_only_sql_transaction: the server reached is a standby, or a primary made read-only. */
const READ_ONLY = '25006';

/**
 * After a failover the stable address (a Kubernetes `-rw` Service, a proxy, a DNS name) leads to
 * the new primary, but connections opened before keep talking to the old server, which answers
 * writes with 25006 when it was demoted rather than stopped (decision 0116). The first such answer
 * on any connection retires every connection the pool holds: idle ones at once, busy ones when
 * they are released; new ones go through the address again. Reads on a retired connection would
 * see a server that no longer takes writes, so none is kept for them either.
 *
 * The answer is seen on pg's connection object ('errorMessage', the server's ErrorResponse), so
 * Prisma's queries, `sql`'s and the pool's own are all covered, whoever handles the error.
 */
export function dropReadOnlyConnections(pool: pg.Pool, onRetire: () => void): void {
  let generation = 0;
  const born = new WeakMap<pg.ClientBase, number>();
  const retired = (client: pg.ClientBase) => (born.get(client) ?? generation) < generation;

  const retire = () => {
    generation += 1;
    onRetire();
    // Idle connections are handed out before new ones are made: take each once and close it.
    for (let i = pool.idleCount; i > 0; i -= 1) {
      pool.connect((err, client, release) => {
        if (!err && client) release(retired(client) ? true : undefined);
      });
    }
  };

  pool.on('connect', (client) => {
    born.set(client, generation);
    (client as unknown as { connection: NodeJS.EventEmitter }).connection.on('errorMessage', (msg: { code?: string }) => {
      if (msg.code === READ_ONLY) retire();
    });
  });
  // pg-pool removes a client that is ending when it comes back (rather than keep it idle).
  pool.on('release', (_err: Error | undefined, client: pg.PoolClient) => {
    if (retired(client)) client.end(() => undefined);
  });
}

/**
 * Prisma's adapter begins its interactive transactions with a plain BEGIN; behind a pooler the
 * settings a direct connection had from its startup options are set in the transaction right
 * after (one more round trip, for Prisma's transactions only: the cold paths).
 */
export function withTransactionSettings(factory: SqlDriverAdapterFactory, settings: readonly (readonly [string, string])[]): SqlDriverAdapterFactory {
  if (settings.length === 0) return factory;
  const set = settings.map(([name, value]) => `SET LOCAL ${name} = ${quoteLiteral(value)}`).join('; ');
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    async connect(): Promise<SqlDriverAdapter> {
      const adapter = await factory.connect();
      const begin = adapter.startTransaction.bind(adapter);
      adapter.startTransaction = async (isolationLevel) => {
        const tx = await begin(isolationLevel);
        try {
          await tx.executeRaw({ sql: set, args: [], argTypes: [] });
        } catch (err) {
          await tx.executeRaw({ sql: 'ROLLBACK', args: [], argTypes: [] }).catch(() => undefined);
          await tx.rollback();
          throw err;
        }
        return tx;
      };
      return adapter;
    },
  };
}
