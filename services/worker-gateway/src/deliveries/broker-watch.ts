import type { RedisConnection } from '@po/queues';

export interface BrokerWatch {
  /** The connection is up and Redis answered its last PING within `silentAfterMs`. */
  ready(): boolean;
  stop(): void;
}

/**
 * Whether Redis answers, not only whether the connection is up. A Redis that stops answering
 * without closing its connections (a frozen process, a network that drops packets) leaves the
 * connection `ready`, and a pull would wait on a fetch that cannot answer until its deadline (the
 * fetch connection's command timeout is longer than a producer's, decision 0120). One PING every
 * `intervalMs`, never two at once: while one has gone unanswered for longer than `silentAfterMs`
 * (a producer command would have timed out by then), or the last one failed, Redis counts as away
 * and pulls answer 503 at once; the first answer makes it ready again.
 */
export function watchBroker(
  connection: RedisConnection,
  options: { silentAfterMs: number; intervalMs?: number; now?: () => number },
): BrokerWatch {
  const now = options.now ?? Date.now;
  let sentAt: number | undefined;
  let failed = false;
  const ping = () => {
    if (sentAt !== undefined) return;
    sentAt = now();
    connection.ping().then(
      () => {
        failed = false;
      },
      () => {
        failed = true;
      },
    ).finally(() => {
      sentAt = undefined;
    });
  };
  const timer = setInterval(ping, options.intervalMs ?? 1000);
  timer.unref();
  return {
    ready: () => connection.status === 'ready' && !failed && !(sentAt !== undefined && now() - sentAt > options.silentAfterMs),
    stop: () => clearInterval(timer),
  };
}
