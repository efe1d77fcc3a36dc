import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { keySlot } from '@po/queues';
import { freePort } from './processes.js';
import { RedisProcess, probeRedis as probe } from './redis-process.js';

const run = promisify(execFile);

/** One cluster node: a `redis-server --cluster-enabled yes` with its own directory (and nodes.conf). */
class ClusterNode extends RedisProcess {
  startNode(): void {
    // No persistence: a restarted node rejoins by its nodes.conf and resyncs from its new primary.
    const args = [
      '--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir,
      '--cluster-enabled', 'yes', '--cluster-config-file', join(this.dir, 'nodes.conf'), '--cluster-node-timeout', '1000',
      '--appendonly', 'no', '--save', '', '--daemonize', 'no',
      // A replica's full sync starts at once instead of after Redis's 5-second wait for more replicas.
      '--repl-diskless-sync-delay', '0',
    ];
    this.start('redis-server', args);
  }
}

type SlotRange = [number, number, [string, number, ...unknown[]], ...[string, number, ...unknown[]][]];

/**
 * A private six-node Redis Cluster (three primaries, one replica each) on 127.0.0.1 and free ports,
 * for tests that kill a primary and watch its replica take over (cluster-node-timeout 1 s).
 */
export class RedisCluster {
  private constructor(private readonly nodes: ClusterNode[]) {}

  static async start(): Promise<RedisCluster> {
    const nodes: ClusterNode[] = [];
    for (let i = 0; i < 6; i += 1) nodes.push(new ClusterNode(await freePort(), mkdtempSync(join(tmpdir(), 'po-e2e-rcluster-'))));
    const cluster = new RedisCluster(nodes);
    try {
      nodes.forEach((n) => n.startNode());
      for (const n of nodes) await cluster.waitFor(`node ${n.port} answering`, async () => (await probe(n.port, (r) => r.ping())) === 'PONG');
      await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes']);
      await cluster.waitHealthy();
      // Until its replica has synced, a primary cannot fail over (nor confirm a write with WAIT).
      await cluster.waitFor('every replica synced', async () => {
        const roles = await Promise.all(nodes.map((n) => probe(n.port, (r) => r.info('replication'))));
        return roles.filter((i) => i?.includes('role:slave') && i.includes('master_link_status:up')).length === 3;
      });
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  get ports(): number[] {
    return this.nodes.map((n) => n.port);
  }

  /** What the services need to reach it. */
  get env(): Record<string, string> {
    return { REDIS_CLUSTER_NODES: this.nodes.map((n) => `127.0.0.1:${n.port}`).join(','), REDIS_MIN_REPLICAS_ACK: '1' };
  }

  /** A running node to ask about the cluster. */
  private async askAny<T>(ask: (r: Redis) => Promise<T>): Promise<T> {
    for (const n of this.nodes) {
      if (!n.running) continue;
      const answer = await probe(n.port, ask);
      if (answer !== undefined) return answer;
    }
    throw new Error('no cluster node answers');
  }

  /** The port of the primary that owns `key`'s slot now. */
  async masterOf(key: string): Promise<number> {
    const slot = keySlot(key);
    const fromNode = Number(await this.askAny((r) => r.call('CLUSTER', 'KEYSLOT', key)));
    if (fromNode !== slot) throw new Error(`CLUSTER KEYSLOT ${key} is ${fromNode}, keySlot says ${slot}`);
    const ranges = (await this.askAny((r) => r.call('CLUSTER', 'SLOTS'))) as SlotRange[];
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no primary owns slot ${slot}`);
    return Number(range[2][1]);
  }

  /**
   * SIGKILL the primary on `port`; resolves once its replica was promoted (after the node timeout)
   * and serves `key`, with the port of that new primary.
   */
  async killMaster(port: number, key: string): Promise<number> {
    if ((await this.masterOf(key)) !== port) throw new Error(`${key} is not on ${port}`);
    await this.node(port).kill();
    let promoted = port;
    await this.waitFor(`a replica serving ${key} in place of ${port}`, async () => {
      promoted = await this.masterOf(key).catch(() => port);
      return promoted !== port;
    });
    await this.waitHealthy();
    return promoted;
  }

  /** Starts a killed node again on its port and nodes.conf: it rejoins, as a replica of whoever took its slots. */
  async restart(port: number): Promise<void> {
    this.node(port).startNode();
    await this.waitFor(`node ${port} answering`, async () => (await probe(port, (r) => r.ping())) === 'PONG');
  }

  /** Every running node says cluster_state:ok and all 16384 slots are served. */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    await this.waitFor('cluster_state:ok on every node', async () => {
      for (const n of this.nodes.filter((x) => x.running)) {
        const info = await probe(n.port, (r) => r.call('CLUSTER', 'INFO') as Promise<string>);
        if (!info || !info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) return false;
      }
      return true;
    }, timeoutMs);
  }

  /** The node on `port` is a replica that finished syncing with its primary. */
  async waitReplicaSynced(port: number, timeoutMs = 30_000): Promise<void> {
    await this.waitFor(`node ${port} a synced replica`, async () => {
      const info = await probe(port, (r) => r.info('replication'));
      return !!info && info.includes('role:slave') && info.includes('master_link_status:up');
    }, timeoutMs);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.kill()));
    for (const n of this.nodes) rmSync(n.dir, { recursive: true, force: true });
  }

  private node(port: number): ClusterNode {
    const n = this.nodes.find((x) => x.port === port);
    if (!n) throw new Error(`no cluster node on ${port}`);
    return n;
  }

  private async waitFor(what: string, ok: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (await ok()) return;
      await sleep(100);
    }
    throw new Error(`${what}: not after ${timeoutMs} ms`);
  }
}
