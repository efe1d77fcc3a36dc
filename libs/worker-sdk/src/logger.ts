// The SDK's own diagnostics. It logs ids, counters, statuses and reasons; never stage input,
// results, context keys or context values.

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug?(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export type LogLevelName = 'debug' | 'info' | 'warn' | 'error';

const rank: Record<LogLevelName, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface JsonLoggerOptions {
  /** Lowest level written; default 'info'. */
  level?: LogLevelName;
  /** Where lines go; default process.stderr. */
  write?: (line: string) => void;
  /** Fields on every line, for example `{ instanceId }`. */
  base?: LogFields;
}

/** One JSON object per line: `{"time","level","msg",...fields}`. */
export function createJsonLogger(options: JsonLoggerOptions = {}): Required<Logger> {
  const min = rank[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const base = options.base ?? {};
  const emit = (level: LogLevelName) => (message: string, fields?: LogFields) => {
    if (rank[level] < min) return;
    const entry = { time: new Date().toISOString(), level, msg: message, ...base, ...fields };
    write(`${JSON.stringify(entry, errorReplacer)}\n`);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

/** A logger that drops everything. */
export const silentLogger: Required<Logger> = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};

/** Fills in a missing `debug` and shields the worker from a throwing user logger. */
export function safeLogger(logger: Logger): Required<Logger> {
  const guard =
    (fn: ((message: string, fields?: LogFields) => void) | undefined) =>
    (message: string, fields?: LogFields) => {
      try {
        fn?.call(logger, message, fields);
      } catch {
        // A broken logger must not break the worker.
      }
    };
  return {
    debug: guard(logger.debug),
    info: guard(logger.info),
    warn: guard(logger.warn),
    error: guard(logger.error),
  };
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}
