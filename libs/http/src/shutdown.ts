import type { Logger } from '@po/telemetry';

export type ShutdownStep = [name: string, stop: () => Promise<unknown>];

/**
 * Ordered graceful shutdown on SIGTERM/SIGINT: each step runs after the previous one finished
 * (stop accepting HTTP, drain workers, close queues and Redis, disconnect Prisma). A second signal
 * or the overall timeout forces the exit.
 */
export function onShutdown(logger: Logger, timeoutMs: number, steps: ShutdownStep[]): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    let failed = false;
    for (const [name, step] of steps) {
      try {
        await step();
        logger.info({ step: name }, 'stopped');
      } catch (err) {
        failed = true;
        logger.error({ err, step: name }, 'shutdown step failed');
      }
    }
    logger.flush();
    process.exit(failed ? 1 : 0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
