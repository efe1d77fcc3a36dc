// Exit codes, and how each kind of failure is told to the person or script that ran `po`.
import { ConnectionError, ProblemError } from '@po/client';
import { CommanderError } from 'commander';

/** `po`'s exit codes (documented in README.md and `po --help`). */
export const EXIT = {
  /** Done; `watch`: the pipeline Completed. */
  OK: 0,
  /** The API answered with an error (its problem is printed), or something unexpected failed. */
  ERROR: 1,
  /** Bad usage: unknown command or option, invalid value, unreadable file, no API key. */
  USAGE: 2,
  /** No answer from the API (connection refused, DNS, timeout). */
  UNREACHABLE: 3,
  /** `watch`: the pipeline Failed. */
  FAILED: 4,
  /** `watch`: the pipeline was Cancelled. */
  CANCELLED: 5,
  /** `watch --timeout`: still running when the time was up. */
  TIMEOUT: 6,
} as const;

export const EXIT_CODES_HELP = `Exit codes:
  0  done (watch: the pipeline Completed)
  1  the API answered with an error: its code and field errors are printed on stderr
  2  bad usage: unknown command or option, invalid value, unreadable file, no API key
  3  the API could not be reached
  4  watch: the pipeline Failed
  5  watch: the pipeline was Cancelled
  6  watch: --timeout elapsed before the pipeline finished`;

/** A mistake in how `po` was called (exit 2). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

/** The human form of a problem: title, code and status, detail, then one line per field error. */
export function describeProblem(problem: ProblemError): string {
  const lines = [
    `po: ${problem.title} (${problem.code}, HTTP ${problem.status})${problem.detail ? `: ${problem.detail}` : ''}`,
  ];
  for (const e of problem.errors)
    lines.push(`  ${e.field === '' ? '(body)' : e.field}: ${e.message}`);
  if (problem.retryAfterSeconds !== undefined)
    lines.push(`  retry after: ${problem.retryAfterSeconds} s`);
  if (problem.traceId) lines.push(`  trace id: ${problem.traceId}`);
  return lines.join('\n');
}

/** Prints `err` on stderr and returns the exit code it means. */
export function reportError(err: unknown, io: Io, output: 'table' | 'json' = 'table'): number {
  if (err instanceof CommanderError) {
    // commander printed its message (or the help) already.
    return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  }
  if (err instanceof ProblemError) {
    io.err(output === 'json' ? JSON.stringify(err.toJSON()) : describeProblem(err));
    return EXIT.ERROR;
  }
  if (err instanceof ConnectionError) {
    io.err(`po: cannot reach the API (${err.message}); set PO_API_URL or --api-url`);
    return EXIT.UNREACHABLE;
  }
  if (err instanceof UsageError) {
    io.err(`po: ${err.message}`);
    return EXIT.USAGE;
  }
  io.err(
    `po: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
  );
  return EXIT.ERROR;
}
