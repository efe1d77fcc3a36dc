import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './processes.js';
import { RedisProcess, probeRedis as probe } from './redis-process.js';

const MASTER = 'po-e2e';

/**
 * A private Redis primary, one replica and three sentinels (quorum 2) on 127.0.0.1 and free ports,
 * for tests that kill the primary and watch Sentinel promote the replica (down after 1 s).
 */
export class RedisSentinelSet {
  /** Each data node's own settings: whom it replicates when started (null: none, a primary). */
  private readonly replicaOf = new Map<RedisProcess, number | null>();

  private constructor(
    private readonly data: RedisProcess[],
    private readonly sentinels: RedisProcess[],
  ) {}

  static async start(): Promise<RedisSentinelSet> {
    const node = async () =>
      new RedisProcess(await freePort(), mkdtempSync(join(tmpdir(), 'po-e2e-sentinel-')));
    const data = [await node(), await node()];
    const sentinels = [await node(), await node(), await node()];
    const set = new RedisSentinelSet(data, sentinels);
    try {
      set.startData(data[0]!, null);
      set.startData(data[1]!, data[0]!.port);
      await set.waitFor('the replica synced', async () => set.isSyncedReplica(data[1]!.port));
      for (const s of sentinels) {
        // Sentinel rewrites its configuration file: each gets its own, writable.
        const conf = join(s.dir, 'sentinel.conf');
        writeFileSync(
          conf,
          [
            `port ${s.port}`,
            'bind 127.0.0.1',
            `dir ${s.dir}`,
            'sentinel announce-ip 127.0.0.1',
            `sentinel monitor ${MASTER} 127.0.0.1 ${data[0]!.port} 2`,
            `sentinel down-after-milliseconds ${MASTER} 1000`,
            `sentinel failover-timeout ${MASTER} 5000`,
            `sentinel parallel-syncs ${MASTER} 1`,
            '',
          ].join('\n'),
        );
        s.start('redis-sentinel', [conf]);
      }
      // Faster INFO and hello rounds (10 s and 2 s by default): the sentinels learn of the
      // restarted node and of each other within seconds. SENTINEL DEBUG came with Redis 7.0; an
      // older sentinel keeps its defaults.
      for (const s of sentinels) {
        await set.waitFor(`sentinel ${s.port} answering`, async () => (await probe(s.port, (r) => r.ping())) === 'PONG');
        await probe(s.port, (r) => r.call('SENTINEL', 'DEBUG', 'info-period', '1000', 'publish-period', '500'));
      }
      await set.waitFor('three sentinels that see each other and the replica', async () => {
        const views = await Promise.all(
          sentinels.map((s) =>
            probe(s.port, (r) => r.call('SENTINEL', 'MASTER', MASTER) as Promise<string[]>),
          ),
        );
        return views.every((v) => {
          const fields = new Map<string, string>();
          for (let i = 0; v && i + 1 < v.length; i += 2) fields.set(v[i]!, v[i + 1]!);
          return fields.get('num-other-sentinels') === '2' && fields.get('num-slaves') === '1';
        });
      });
    } catch (err) {
      await set.stop();
      throw err;
    }
    return set;
  }

  /** What the services need to reach it: the sentinels only. */
  get env(): Record<string, string> {
    return {
      REDIS_SENTINELS: this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
      REDIS_SENTINEL_MASTER: MASTER,
      REDIS_MIN_REPLICAS_ACK: '1',
    };
  }

  /** The primary's port as the first sentinel that answers reports it now. */
  async currentPrimary(): Promise<number | undefined> {
    for (const s of this.sentinels) {
      const port = await this.primaryAt(s.port);
      if (port !== undefined) return port;
    }
    return undefined;
  }

  private async primaryAt(sentinelPort: number): Promise<number | undefined> {
    const addr = await probe(
      sentinelPort,
      (r) => r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER) as Promise<[string, string] | null>,
    );
    return addr ? Number(addr[1]) : undefined;
  }

  /**
   * SIGKILL the primary; resolves once every sentinel names the promoted replica and it acts as
   * the primary, with both ports and when the kill was sent.
   */
  async killPrimary(): Promise<{ killed: number; promoted: number; killedAt: number }> {
    const killed = await this.currentPrimary();
    const node = this.data.find((n) => n.port === killed);
    if (!node || killed === undefined) throw new Error(`no data node is the primary (${killed})`);
    const killedAt = Date.now();
    await node.kill();
    let promoted: number = killed;
    await this.waitFor('a promoted replica every sentinel names', async () => {
      const named = new Set(await Promise.all(this.sentinels.map((s) => this.primaryAt(s.port))));
      [promoted = killed] = named.size === 1 ? [...named] : [killed];
      const info =
        promoted === killed ? undefined : await probe(promoted, (r) => r.info('replication'));
      return info?.includes('role:master') === true;
    });
    return { killed, promoted, killedAt };
  }

  /**
   * Starts a killed data node again the way Kubernetes charts for Sentinel do (Bitnami's start
   * script): it asks the sentinels for the current primary and starts as its replica, empty.
   * Resolves once it is that replica, synced. (Left to come back as a primary, it waits for
   * Sentinel's own conversion, which took over 45 s on a loaded CI box.)
   */
  async restart(port: number): Promise<void> {
    const node = this.data.find((n) => n.port === port);
    if (!node || node.running) throw new Error(`node ${port} is not a stopped data node`);
    const primary = await this.currentPrimary();
    if (primary === undefined || primary === port) throw new Error(`the sentinels name no other primary than ${port}`);
    this.startData(node, primary);
    await this.waitFor(
      `node ${port} a synced replica of ${primary}`,
      async () => this.isSyncedReplica(port, primary),
      45_000,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.data].map((n) => n.kill()));
    for (const n of [...this.sentinels, ...this.data])
      rmSync(n.dir, { recursive: true, force: true });
  }

  private startData(node: RedisProcess, replicaOf: number | null): void {
    this.replicaOf.set(node, replicaOf);
    // No persistence: a replica resyncs in full from its primary, at once (no diskless delay).
    const args = [
      '--port',
      String(node.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      node.dir,
      '--appendonly',
      'no',
      '--save',
      '',
      '--repl-diskless-sync-delay',
      '0',
      '--replica-announce-ip',
      '127.0.0.1',
    ];
    if (replicaOf !== null) args.push('--replicaof', '127.0.0.1', String(replicaOf));
    node.start('redis-server', args);
  }

  private async isSyncedReplica(port: number, ofPrimary?: number): Promise<boolean> {
    const info = await probe(port, (r) => r.info('replication'));
    if (!info || !info.includes('role:slave') || !info.includes('master_link_status:up')) return false;
    return ofPrimary === undefined || info.includes(`master_port:${ofPrimary}\r\n`);
  }

  private async waitFor(
    what: string,
    ok: () => Promise<boolean>,
    timeoutMs = 30_000,
  ): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (await ok()) return;
      await sleep(100);
    }
    throw new Error(`${what}: not after ${timeoutMs} ms`);
  }
}
