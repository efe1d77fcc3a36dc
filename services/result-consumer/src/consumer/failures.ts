import { isTransientDbError } from '@po/db';
import type { ResultFailureClass, StageResultMessage } from '@po/queues';
import { redactLine, rememberSensitive } from '@po/telemetry';

/**
 * SQLSTATEs isTransientDbError retries that one transaction's contention raises, not an outage:
 * deadlock, serialization failure, lock, statement and idle-in-transaction timeouts. The engine
 * already retried them; when they persist past that, the result itself may be their cause (a
 * statement it makes too slow), so they spend attempts like any other failure.
 */
const CONTENTION = new Set(['40P01', '40001', '55P03', '57014', '25P03']);

/**
 * Outages isTransientDbError does not name: no pool connection within 10 s, too many connections,
 * and Redis unreachable (a fail-fast producer's errors).
 */
const UNREACHABLE =
  /timeout exceeded when trying to connect|Connection ended unexpectedly|ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|Connection is closed|Reached the max retries per request limit|Stream isn't writeable/i;

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * How a failed application counts (decision 0119): an outage (PostgreSQL or Redis away, a
 * failover) waits without spending an attempt, since the result is not at fault and no number of
 * attempts would be right for an outage of unknown length; contention and everything else spend one.
 */
export function classifyFailure(err: unknown): ResultFailureClass {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth += 1) {
    const code = codeOf(e);
    if (code && CONTENTION.has(code)) return 'contention';
    if (isTransientDbError(e) || code === '53300' || UNREACHABLE.test(String((e as { message?: unknown }).message ?? ''))) return 'outage';
  }
  return 'error';
}

/** Characters of an error message kept in a dead letter. */
const REASON_CHARS = 500;

/**
 * Tells the logger the sensitive context values a result carries. The engine learns them only from
 * a result it applied; one that failed may have them in its error, which is logged and kept.
 */
export function rememberResultSecrets(message: unknown): void {
  const items = (message as { result?: { contextItems?: unknown } } | null)?.result?.contextItems;
  if (!Array.isArray(items)) return;
  const values: string[] = [];
  for (const item of items as { isSensitive?: unknown; value?: unknown }[]) {
    if (item?.isSensitive === true && typeof item.value === 'string') values.push(item.value);
  }
  if (values.length > 0) rememberSensitive(values);
}

/** The dead letter's text for a failure: the error's message, cut short and censored like a log line. */
export function describeFailure(err: unknown, message: StageResultMessage): string {
  rememberResultSecrets(message);
  const raw = err instanceof Error ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}` : String(err);
  const code = codeOf(err);
  const text = `${code ? `[${code}] ` : ''}${raw}`.slice(0, REASON_CHARS);
  return JSON.parse(redactLine(JSON.stringify(text))) as string;
}
