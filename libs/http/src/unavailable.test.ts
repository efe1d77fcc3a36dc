import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './unavailable.js';

// Shapes recorded from Prisma 7.10 (@prisma/adapter-pg) and pg 8 against a real PostgreSQL: a
// PrismaClientKnownRequestError has own keys code, meta, clientVersion and name.
const prisma = (code: string, message: string, meta: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), {
    name: 'PrismaClientKnownRequestError',
    code,
    meta,
    clientVersion: '7.10.0',
  });
const adapterCause = (cause: Record<string, unknown>) => ({
  driverAdapterError: { name: 'DriverAdapterError', cause },
});
const postgres = (code: string, message: string, severity = 'ERROR') =>
  adapterCause({
    originalCode: code,
    originalMessage: message,
    kind: 'postgres',
    code,
    severity,
    message,
  });
const pgError = (code: string, message: string) =>
  Object.assign(new Error(message), { name: 'error', length: 100, severity: 'ERROR', code });
const socket = (code: string, syscall: string) =>
  Object.assign(new Error(`${syscall} ${code} 127.0.0.1:5432`), {
    errno: -111,
    code,
    syscall,
    address: '127.0.0.1',
    port: 5432,
  });

describe('database failures that answer 503 with Retry-After, not 500', () => {
  it.each<[string, unknown]>([
    [
      'a transaction that outlived its timeout, at commit (P2028)',
      prisma(
        'P2028',
        'Transaction API error: A commit cannot be executed on an expired transaction. The timeout for this transaction was 5000 ms, however 5954 ms passed since the start of the transaction.',
        { operation: 'commit', timeout: 5000, timeTaken: 5954 },
      ),
    ],
    [
      'a query in an expired transaction (P2028)',
      prisma(
        'P2028',
        'Transaction API error: A query cannot be executed on an expired transaction.',
        { operation: 'query', timeout: 300, timeTaken: 1016 },
      ),
    ],
    [
      'a transaction that could not start within maxWait (P2028)',
      prisma('P2028', 'Transaction API error: Unable to start a transaction in the given time.'),
    ],
    [
      'lock_timeout in a raw query (P2010 / 55P03)',
      prisma(
        'P2010',
        'Raw query failed. Code: `55P03`. Message: `canceling statement due to lock timeout`',
        postgres('55P03', 'canceling statement due to lock timeout'),
      ),
    ],
    [
      'lock_timeout in a model query (P2039 / 55P03)',
      prisma('P2039', 'Database error. Code: `55P03`.', {
        modelName: 'Application',
        ...postgres('55P03', 'canceling statement due to lock timeout'),
      }),
    ],
    [
      'statement_timeout (57014)',
      prisma(
        'P2010',
        'Raw query failed. Code: `57014`.',
        postgres('57014', 'canceling statement due to statement timeout'),
      ),
    ],
    [
      'a terminated backend (57P01)',
      prisma(
        'P2010',
        'Raw query failed. Code: `57P01`.',
        postgres('57P01', 'terminating connection due to administrator command', 'FATAL'),
      ),
    ],
    [
      'an unreachable server through Prisma (P1001)',
      prisma(
        'P1001',
        "Can't reach database server at 127.0.0.1:1",
        adapterCause({ kind: 'DatabaseNotReachable', host: '127.0.0.1', port: 1 }),
      ),
    ],
    [
      'a pool timeout through Prisma',
      Object.assign(new Error('timeout exceeded when trying to connect'), {
        clientVersion: '7.10.0',
      }),
    ],
    ['a connect timeout through pg', new Error('Connection terminated due to connection timeout')],
    ['a lost connection through pg', new Error('Connection terminated unexpectedly')],
    [
      'lock_timeout through pg (55P03)',
      pgError('55P03', 'canceling statement due to lock timeout'),
    ],
    [
      'a serialization failure through pg (40001)',
      pgError('40001', 'could not serialize access due to concurrent update'),
    ],
    ['a connection exception through pg (08006)', pgError('08006', 'connection failure')],
    [
      'a write on a server that turned read-only in a failover (25006)',
      pgError('25006', 'cannot execute INSERT in a read-only transaction'),
    ],
    ['a refused connection through pg', socket('ECONNREFUSED', 'connect')],
    ['a reset connection through pg', socket('ECONNRESET', 'read')],
    [
      'a refused connection wrapped as a cause',
      new Error('query failed', { cause: socket('ECONNREFUSED', 'connect') }),
    ],
    [
      'a refused connection on both addresses (AggregateError)',
      Object.assign(new AggregateError([socket('ECONNREFUSED', 'connect')], ''), {
        code: 'ECONNREFUSED',
      }),
    ],
  ])('%s', (_what, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
  });
});

describe('everything else stays what it was', () => {
  it.each<[string, unknown]>([
    [
      'a unique violation (P2002)',
      prisma(
        'P2002',
        'Unique constraint failed',
        adapterCause({ kind: 'UniqueConstraintViolation' }),
      ),
    ],
    ['a record not found (P2025)', prisma('P2025', 'No record was found')],
    [
      'an unsupported column type (P2010)',
      prisma(
        'P2010',
        'Failed to deserialize column',
        adapterCause({ kind: 'UnsupportedNativeDataType', type: 'void' }),
      ),
    ],
    ['a syntax error through pg (42601)', pgError('42601', 'syntax error at or near "SELEC"')],
    [
      'a date out of range through pg (22008)',
      pgError('22008', 'date/time field value out of range'),
    ],
    [
      'a client that aborted its upload (ECONNRESET without a syscall)',
      Object.assign(new Error('aborted'), { code: 'ECONNRESET' }),
    ],
    ['a programming error', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a string', 'P2028'],
    ['null', null],
  ])('%s', (_what, err) => {
    expect(isDatabaseUnavailable(err)).toBe(false);
  });

  it('a cycle of causes ends', () => {
    const a: { cause?: unknown } = new Error('a');
    a.cause = a;
    expect(isDatabaseUnavailable(a)).toBe(false);
  });
});
