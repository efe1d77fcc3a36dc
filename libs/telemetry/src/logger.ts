import { pino, type DestinationStream, type Logger } from 'pino';
import { redactLine } from './redaction.js';

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
  'ackToken',
  '*.ackToken',
];

/**
 * Structured JSON logs on stdout, one object per line, with the service name on every line.
 * Credential paths are removed by pino; every finished line then passes `redactLine`, which
 * censors API keys, session tokens and remembered sensitive context values (redaction.ts).
 * Lines are written asynchronously: under load the lines logged while a write is in flight go out
 * together in the next one, instead of one write(2) per line (every request logs one); pino
 * flushes what is pending when the process exits.
 */
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
      hooks: { streamWrite: redactLine },
    },
    options.destination ?? pino.destination({ sync: false }),
  );
}
