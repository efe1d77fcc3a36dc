// Opt-in signal handling: the first SIGTERM/SIGINT drains the worker; a second one exits at once.
import { constants } from 'node:os';
import type { Logger } from './logger.js';

export function onSignals(
  signals: readonly NodeJS.Signals[],
  stop: (reason: string) => Promise<void>,
  logger: Required<Logger>,
): () => void {
  const listeners = new Map<NodeJS.Signals, () => void>();
  const remove = () => {
    for (const [sig, fn] of listeners) process.removeListener(sig, fn);
    listeners.clear();
  };
  let received = false;
  for (const sig of signals) {
    const fn = () => {
      if (received) {
        logger.warn('second signal; exiting without waiting', { signal: sig });
        process.exit(128 + (constants.signals[sig] ?? 1));
      }
      received = true;
      logger.info('signal received; stopping', { signal: sig });
      stop(`signal ${sig}`)
        .catch((err: unknown) => logger.error('stop failed', { error: String(err) }))
        .finally(remove);
    };
    listeners.set(sig, fn);
    process.on(sig, fn);
  }
  return remove;
}
