// Which failures mean "the database cannot do this now" rather than "this request is wrong" or
// "the code is wrong": those answer 503 with Retry-After instead of 500 (decision 0080). Shapes as
// Prisma 7 (with @prisma/adapter-pg) and pg 8 throw them; see unavailable.test.ts.

/** Seconds a client is told to wait before it retries. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * Prisma codes: P1001 cannot reach the server, P1002 reaching it timed out, P1008 operation timed
 * out, P1017 server closed the connection, P2024 no pool connection in time, P2028 transaction API
 * error (expired: it outlived its timeout; or could not start within maxWait), P2034 write
 * conflict or deadlock.
 */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028', 'P2034']);

/**
 * SQLSTATEs: 55P03 lock_not_available (lock_timeout), 57014 query_canceled (statement_timeout),
 * 57P01-57P05 shutdown, crash, cannot connect now, idle session timeout, 53300
 * too_many_connections, 40001/40P01 serialization failure and deadlock, 25P03 idle in transaction
 * timeout, 25006 a write on a server that turned read-only (a failover: the pool drops its
 * connections, the retry reaches the new primary). Class 08 (connection exceptions) is matched as a class.
 */
const SQLSTATES = new Set([
  '55P03',
  '57014',
  '57P01',
  '57P02',
  '57P03',
  '57P04',
  '57P05',
  '53300',
  '40001',
  '40P01',
  '25P03',
  '25006',
]);

/**
 * What Node reports when a connection cannot be made or is lost (pg passes these through; a Redis
 * connection's look the same, and a 503 is as right for it).
 */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** Driver adapter error kinds for an unreachable, lost or overloaded server. */
const ADAPTER_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionWriteConflict',
]);

/** pg's own errors carry no code: a pool without a free connection in time, a lost connection. */
const PG_MESSAGES =
  /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|Connection ended unexpectedly|Query read timeout)/;

function isSqlState(code: unknown): boolean {
  return typeof code === 'string' && (SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code));
}

function matchesItself(err: Record<string, unknown>): boolean {
  const code = err.code;
  if (typeof code === 'string') {
    if (/^P\d{4}$/.test(code) && typeof err.clientVersion === 'string')
      return PRISMA_CODES.has(code);
    if (isSqlState(code)) return true;
    // With a syscall: a socket of ours failed (a client aborting its upload is ECONNRESET without one).
    if (SOCKET_CODES.has(code) && typeof err.syscall === 'string') return true;
  }
  if (isSqlState(err.originalCode) || (typeof err.kind === 'string' && ADAPTER_KINDS.has(err.kind)))
    return true;
  return typeof err.message === 'string' && PG_MESSAGES.test(err.message);
}

/** Where a wrapped error keeps the one it wraps. */
function inner(err: Record<string, unknown>): unknown[] {
  const meta = err.meta as { driverAdapterError?: { cause?: unknown } } | undefined;
  const nested = Array.isArray(err.errors) ? (err.errors as unknown[]) : [];
  return [err.cause, meta?.driverAdapterError?.cause, ...nested];
}

/** True when `err` (or what it wraps, a few levels down) says the database is slow or unreachable. */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  const record = err as Record<string, unknown>;
  return matchesItself(record) || inner(record).some((e) => isDatabaseUnavailable(e, depth + 1));
}
