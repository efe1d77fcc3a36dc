import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

// Credentials can reach a log line through headers or bodies; pino removes them before writing.
const REDACT_PATHS = [
  'apiKey',
  '*.apiKey',
  'req.headers["x-api-key"]',
  'req.headers["x-worker-session"]',
  'headers["x-api-key"]',
  'headers["x-worker-session"]',
  'sessionToken',
  '*.sessionToken',
  'token',
  '*.token',
];

/** Structured JSON logs on stdout, one object per line, with the service name on every line. */
export function createLogger(options: {
  service: string;
  level?: string;
  destination?: DestinationStream;
}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    },
    options.destination ?? pino.destination({ sync: true }),
  );
}
