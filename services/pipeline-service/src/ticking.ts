/**
 * Runs `tick` `tickMs` after the previous one ended (never two at once), until stopped. `stop`
 * waits for the tick under way; a tick can read `stopping` to end early. The bulk operation runner
 * and the webhook deliverer loop this way.
 */
export function startTicking(
  tick: () => Promise<void>,
  tickMs: number,
): { stop(): Promise<void>; readonly stopping: boolean } {
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const loop = () => {
    if (stopping) return;
    running = tick().finally(() => {
      if (!stopping) timer = setTimeout(loop, tickMs);
    });
  };
  timer = setTimeout(loop, tickMs);
  return {
    get stopping() {
      return stopping;
    },
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await running;
    },
  };
}
