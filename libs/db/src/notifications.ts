import pg from 'pg';

/** What a subscriber is told: each notification on its channels, and whether it is listening now. */
export interface NotificationHandler {
  notify(channel: string, payload: string): void;
  /** True once its channels are listened to; false when the session is lost (until listening again). */
  listening(on: boolean): void;
}

/**
 * One session connection per process for `LISTEN` (decisions 0063, 0099, 0116): every
 * notified cache of the process shares it, so a process holds at most one connection outside its
 * pool. It goes to the server itself (DATABASE_DIRECT_URL): behind a transaction-mode pooler a
 * LISTEN would be left behind on whichever server connection ran it. Without a direct server
 * (`config` null) nothing listens, and the caches that need it never cache.
 */
export interface Notifications {
  subscribe(channels: readonly string[], handler: NotificationHandler): () => void;
  /** Open session connections: 0 or 1 (po_db_session_connections). */
  readonly connections: number;
  /** Why nothing can listen, when nothing can (no direct server behind a pooler). */
  readonly unavailable: string | null;
  /** Drops the session and opens a new one (the server it reached turned read-only: a failover). */
  reconnect(): void;
  close(): Promise<void>;
}

const RETRY_MS = 1000;

export function createNotifications(config: pg.ClientConfig | null, unavailable: string | null = null): Notifications {
  const subscribers = new Map<NotificationHandler, readonly string[]>();
  let client: pg.Client | undefined;
  let listening = false;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const channels = () => new Set([...subscribers.values()].flat());
  const tell = (on: boolean) => {
    for (const handler of subscribers.keys()) handler.listening(on);
  };

  const drop = (c: pg.Client) => {
    c.removeAllListeners('end');
    c.on('error', () => undefined);
    void c.end().catch(() => undefined);
  };

  const lost = (c: pg.Client) => {
    if (client !== c) return;
    client = undefined;
    drop(c);
    if (listening) {
      listening = false;
      tell(false);
    }
    if (!closed) retry = setTimeout(() => void open(), RETRY_MS);
  };

  const open = async (): Promise<void> => {
    if (closed || client || !config || subscribers.size === 0) return;
    const c = new pg.Client(config);
    client = c;
    c.on('notification', (n) => {
      for (const [handler, wanted] of subscribers) if (wanted.includes(n.channel)) handler.notify(n.channel, n.payload ?? '');
    });
    c.on('error', () => lost(c));
    c.on('end', () => lost(c));
    try {
      await c.connect();
      // A server that takes no writes sends no notifications: after a failover the address may
      // still lead to the old primary for a moment (read-only, it accepts LISTEN). Try again later.
      const [{ ro }] = (await c.query<{ ro: boolean }>("SELECT current_setting('transaction_read_only') = 'on' AS ro")).rows as [{ ro: boolean }];
      if (ro) throw new Error('the server is read-only');
      for (const channel of channels()) await c.query(`LISTEN ${channel}`);
      if (client !== c) return;
      listening = true;
      tell(true);
    } catch {
      lost(c);
    }
  };

  return {
    subscribe(wanted, handler) {
      subscribers.set(handler, [...wanted]);
      if (listening && client) {
        // Already in session: listen to what is new, then tell this subscriber alone.
        const c = client;
        void (async () => {
          try {
            for (const channel of wanted) await c.query(`LISTEN ${channel}`);
            if (client === c && subscribers.has(handler)) handler.listening(true);
          } catch {
            lost(c);
          }
        })();
      } else void open();
      return () => {
        subscribers.delete(handler);
        // The last one out closes the session (a process that closed its caches can exit).
        if (subscribers.size === 0) {
          clearTimeout(retry);
          listening = false;
          const c = client;
          client = undefined;
          if (c) drop(c);
        }
      };
    },
    get connections() {
      return client && listening ? 1 : 0;
    },
    unavailable: config ? null : unavailable,
    reconnect() {
      if (client) lost(client);
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      subscribers.clear();
      listening = false;
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners('end');
        c.on('error', () => undefined);
        await c.end().catch(() => undefined);
      }
    },
  };
}
