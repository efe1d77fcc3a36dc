// A small in-process server that plays the worker protocol, for the SDK's tests.
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stageMessage } from './messages.test-support.js';
import type { StageNextMessage } from './protocol.js';

export const API_KEY = 'pos_test-key';

export interface Recorded {
  seq: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  receivedAt: number;
  status?: number;
  respondedAt?: number;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
  /** Close the connection without an answer: the client sees a network error. */
  drop?: boolean;
}

/** A reply that closes the connection without an answer. */
export const dropped: Reply = { status: 0, drop: true };

/** Route keys: 'bootstrap', 'heartbeat', 'events', 'shutdown', 'pull', 'ack', 'acquire', 'renew', 'result'. */
export type Route =
  | 'bootstrap'
  | 'heartbeat'
  | 'events'
  | 'shutdown'
  | 'pull'
  | 'ack'
  | 'acquire'
  | 'renew'
  | 'result';

/** Returns a reply to override the default behaviour, or undefined to keep it. */
export type Override = (req: Recorded, gw: FakeGateway) => Reply | undefined;

interface Waiter {
  queue: string;
  res: ServerResponse;
  req: Recorded;
  timer: NodeJS.Timeout;
}

export class FakeGateway {
  readonly applicationId = 7;
  readonly requests: Recorded[] = [];
  readonly acks: { token: string; requeue: boolean; stageId: number | undefined }[] = [];
  url = '';
  sessionToken = '';
  private sessions = 0;
  private tokens = 0;
  private readonly server: Server;
  private readonly queues = new Map<string, StageNextMessage[]>();
  private readonly deliveries = new Map<string, { queue: string; message: StageNextMessage }>();
  private readonly waiters = new Set<Waiter>();
  private readonly overrides = new Map<Route, Override>();
  readonly attempts = new Map<number, number>();
  /** Answer a pull's `lease` and a result's `ackToken` (decision 0098), as the real gateway does. */
  extensions = false;
  /** With extensions: a pull that waited says its message waited for a place (backlog, decision 0132). */
  waitedForPlace = false;
  /** With extensions: the lease a pull answers (default: granted, as acquire would). */
  pullLease: ((stageId: number) => unknown) | undefined;
  /** The lease a grant reports (leaseExpiresAt); the SDK counts its own leaseDurationMs. */
  leaseMs = 60_000;

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const rec: Recorded = {
          seq: this.requests.length,
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: text === '' ? undefined : (JSON.parse(text) as unknown),
          receivedAt: performance.now(),
        };
        this.requests.push(rec);
        this.handle(rec, res);
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const w of this.waiters) this.finishPull(w, { status: 204 });
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  on(route: Route, override: Override): this {
    this.overrides.set(route, override);
    return this;
  }

  queueOf(handler: string): string {
    return `app_${this.applicationId}_${handler}_StageNext`;
  }

  /** Publishes a stage message on a handler's queue; returns it. */
  enqueue(handler: string, fields: Partial<StageNextMessage> = {}): StageNextMessage {
    const message = stageMessage(this.applicationId, handler, fields);
    this.push(this.queueOf(handler), message);
    return message;
  }

  calls(path: string | RegExp): Recorded[] {
    return this.requests.filter((r) =>
      typeof path === 'string' ? r.path === path : path.test(r.path),
    );
  }

  get pendingPulls(): number {
    return this.waiters.size;
  }

  /** Resolves once `check` holds (polled every 5 ms); rejects after `timeoutMs`. */
  async until(check: () => boolean, timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  private push(queue: string, message: StageNextMessage, front = false): void {
    const list = this.queues.get(queue) ?? [];
    if (front) list.unshift(message);
    else list.push(message);
    this.queues.set(queue, list);
    for (const w of this.waiters) {
      if (w.queue === queue) {
        this.finishPull(w, this.deliver(queue, w.req, this.extensions && this.waitedForPlace) ?? { status: 204 });
        break;
      }
    }
  }

  private deliver(queue: string, rec?: Recorded, backlog = false): Reply | undefined {
    const message = this.queues.get(queue)?.shift();
    if (message === undefined) return undefined;
    this.tokens += 1;
    const token = `tok-${this.tokens}`;
    this.deliveries.set(token, { queue, message });
    const lease =
      this.extensions && rec?.body?.lease && this.session(rec) ? { lease: this.pullLease ? this.pullLease(message.stageId) : this.acquire(message.stageId) } : {};
    return {
      status: 200,
      body: {
        token,
        queue,
        payload: message,
        messageId: `m-${message.executionId}`,
        headers: { h: 'v' },
        ...lease,
        ...(backlog ? { backlog: true } : {}),
      },
    };
  }

  private acquire(stageId: number, renew = false) {
    const attempt = (this.attempts.get(stageId) ?? 0) + (renew ? 0 : 1);
    this.attempts.set(stageId, attempt);
    const leaseExpiresAt = new Date(Date.now() + this.leaseMs).toISOString();
    return { acquired: true, attempt, leaseExpiresAt, reason: null };
  }

  /** An ack by token, from /jobs/ack or a result's ackToken; false when not held. */
  private ackToken(token: string, requeue: boolean): boolean {
    const d = this.deliveries.get(token);
    if (!d) return false;
    this.deliveries.delete(token);
    this.acks.push({ token, requeue, stageId: d.message.stageId });
    if (requeue) this.push(d.queue, d.message, true);
    return true;
  }

  private finishPull(w: Waiter, reply: Reply): void {
    clearTimeout(w.timer);
    this.waiters.delete(w);
    this.send(w.res, w.req, reply);
  }

  private send(res: ServerResponse, rec: Recorded, reply: Reply): void {
    const write = () => {
      if (res.writableEnded || res.destroyed) return;
      if (reply.drop) {
        res.socket?.destroy();
        return;
      }
      const body = reply.body === undefined ? '' : JSON.stringify(reply.body);
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(body);
      rec.status = reply.status;
      rec.respondedAt = performance.now();
    };
    if (reply.delayMs) setTimeout(write, reply.delayMs);
    else write();
  }

  private session(rec: Recorded): boolean {
    return rec.headers['x-worker-session'] === this.sessionToken && this.sessionToken !== '';
  }

  private handle(rec: Recorded, res: ServerResponse): void {
    const route = routeOf(rec.path);
    const override = route && this.overrides.get(route)?.(rec, this);
    if (override) return this.send(res, rec, override);
    const unauthorized: Reply = { status: 401, body: { code: 'unauthorized', detail: 'no' } };
    const apiKeyOk = rec.headers['x-api-key'] === API_KEY;
    switch (route) {
      case 'bootstrap': {
        if (!apiKeyOk) return this.send(res, rec, unauthorized);
        this.sessions += 1;
        this.sessionToken = `sess-${this.sessions}`;
        const handlers = (rec.body.handlers ?? []) as string[];
        return this.send(res, rec, {
          status: 200,
          body: {
            workerId: 'worker-id-1',
            sessionToken: this.sessionToken,
            sessionExpiresAt: new Date(Date.now() + 86_400_000).toISOString(),
            applicationId: this.applicationId,
            queues: handlers.map((h) => this.queueOf(h)),
            heartbeatIntervalSeconds: 30,
            messageBroker: { enabled: false, connectionString: null },
          },
        });
      }
      case 'heartbeat':
      case 'events':
      case 'shutdown':
        return this.send(res, rec, this.session(rec) ? { status: 200 } : unauthorized);
      case 'pull': {
        if (!apiKeyOk) return this.send(res, rec, unauthorized);
        const queue = rec.body.queue as string;
        const ready = this.deliver(queue, rec);
        if (ready || rec.body.waitSeconds === 0)
          return this.send(res, rec, ready ?? { status: 204 });
        const w: Waiter = {
          queue,
          res,
          req: rec,
          timer: setTimeout(() => this.finishPull(w, { status: 204 }), rec.body.waitSeconds * 1000),
        };
        this.waiters.add(w);
        res.on('close', () => {
          clearTimeout(w.timer);
          this.waiters.delete(w);
        });
        return;
      }
      case 'ack': {
        if (!this.ackToken(rec.body.token as string, rec.body.requeue === true)) {
          return this.send(res, rec, { status: 404, body: { code: 'not_found' } });
        }
        return this.send(res, rec, { status: 200 });
      }
      case 'acquire':
      case 'renew': {
        if (!this.session(rec)) return this.send(res, rec, unauthorized);
        const stageId = Number(rec.path.split('/')[2]);
        return this.send(res, rec, { status: 200, body: this.acquire(stageId, route === 'renew') });
      }
      case 'result': {
        if (!apiKeyOk || !this.session(rec)) return this.send(res, rec, unauthorized);
        const acked =
          this.extensions && typeof rec.body.ackToken === 'string'
            ? { acked: this.ackToken(rec.body.ackToken as string, false) }
            : {};
        // Decision 0100: one pull without waiting, after the ack.
        const asked = this.extensions ? (rec.body.next as { queue: string; lease?: unknown } | undefined) : undefined;
        const next = asked ? { next: this.deliver(asked.queue, { ...rec, body: { lease: asked.lease } })?.body ?? null } : {};
        return this.send(res, rec, {
          status: 202,
          body: { accepted: true, stageId: rec.body.stageId, executionId: rec.body.executionId, ...acked, ...next },
        });
      }
      default:
        return this.send(res, rec, { status: 404, body: { code: 'not_found' } });
    }
  }
}

function routeOf(path: string): Route | undefined {
  const fixed: Record<string, Route> = {
    '/workers/bootstrap': 'bootstrap',
    '/workers/heartbeat': 'heartbeat',
    '/workers/events': 'events',
    '/workers/shutdown': 'shutdown',
    '/jobs/pull': 'pull',
    '/jobs/ack': 'ack',
  };
  if (fixed[path]) return fixed[path];
  const m = /^\/stages\/\d+\/(lease\/acquire|lease\/renew|result)$/.exec(path);
  if (!m) return undefined;
  return m[1] === 'result' ? 'result' : m[1] === 'lease/acquire' ? 'acquire' : 'renew';
}
