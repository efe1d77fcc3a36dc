// HTTP calls of the worker protocol, one method per endpoint. Every call has a timeout; failures
// are typed: ApiError (non-2xx), TransportError (unknown outcome), ProtocolError (unusable body).
import { ApiError, ProtocolError, TransportError } from './errors.js';
import type {
  BootstrapRequest,
  BootstrapResponse,
  HeartbeatRequest,
  JsonObject,
  PullJobResponse,
  StageLeaseRequest,
  StageLeaseResponse,
  StageResultAccepted,
  StageResultSubmit,
  WorkerEvent,
} from './protocol.js';
import { httpFetch, type FetchLike } from './transport.js';
import { parseRetryAfter } from './util.js';

export type { FetchLike } from './transport.js';

export interface WorkerClientOptions {
  /** Base URL of the worker routes (/workers/*, /jobs/*, /stages/*), without a trailing slash. */
  baseUrl: string;
  apiKey: string;
  requestTimeoutMs: number;
  fetch?: FetchLike;
}

interface CallOptions {
  body?: unknown;
  apiKey?: boolean;
  session?: string;
  /** W3C traceparent of the execution (lease and result calls), so the gateway's spans join its trace. */
  traceparent?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  ok: readonly number[];
}

/** A pulled delivery whose payload cannot be used; `token` lets the caller acknowledge it. */
export class MalformedDeliveryError extends ProtocolError {
  constructor(
    readonly token: string,
    message: string,
  ) {
    super(message);
  }
}

export class WorkerClient {
  private readonly baseUrl: string;
  private readonly fetch: FetchLike;
  /**
   * The latest session token, sent on every call (pull and ack too, where the server ignores
   * it) so that a load balancer hashing on X-Worker-Session keeps a worker's pull and its ack on
   * the same gateway process (api-spec: "Pull and ack must go to the same API process").
   */
  private routingSession: string | undefined;

  constructor(private readonly options: WorkerClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? httpFetch;
  }

  async bootstrap(body: BootstrapRequest, signal?: AbortSignal): Promise<BootstrapResponse> {
    const path = '/workers/bootstrap';
    const json = await this.call('POST', path, { body, apiKey: true, signal, ok: [200] });
    const r = asObject(json, path);
    if (typeof r.sessionToken === 'string') this.routingSession = r.sessionToken;
    if (
      typeof r.workerId !== 'string' ||
      typeof r.sessionToken !== 'string' ||
      typeof r.applicationId !== 'number' ||
      !Array.isArray(r.queues) ||
      !r.queues.every((q) => typeof q === 'string')
    ) {
      throw new ProtocolError(
        `${path}: response lacks workerId, sessionToken, applicationId or queues`,
      );
    }
    return r as unknown as BootstrapResponse;
  }

  async heartbeat(session: string, body: HeartbeatRequest): Promise<void> {
    await this.call('POST', '/workers/heartbeat', { body, session, ok: [200, 204] });
  }

  async events(session: string, body: { workerId: string; events: WorkerEvent[] }): Promise<void> {
    await this.call('POST', '/workers/events', { body, session, ok: [200, 204] });
  }

  async shutdown(session: string, body: { workerId: string; reason?: string }): Promise<void> {
    await this.call('POST', '/workers/shutdown', { body, session, ok: [200, 204] });
  }

  /**
   * Long-polls one queue. Null when nothing arrived before the deadline (204). With `leaseAs` (a
   * workerId of the session) the server also acquires the delivered stage's lease (decision 0098).
   */
  async pull(
    queue: string,
    waitSeconds: number,
    signal?: AbortSignal,
    leaseAs?: string,
  ): Promise<PullJobResponse | null> {
    const path = '/jobs/pull';
    const json = await this.call('POST', path, {
      body:
        leaseAs === undefined
          ? { queue, waitSeconds }
          : { queue, waitSeconds, lease: { workerId: leaseAs } },
      apiKey: true,
      signal,
      timeoutMs: waitSeconds * 1000 + this.options.requestTimeoutMs,
      ok: [200, 204],
    });
    if (json === undefined) return null;
    return deliveryFrom(json, path, queue);
  }

  /** Acknowledges a delivery. Must reach the API process that served the pull (sticky routing). */
  async ack(token: string, requeue = false): Promise<void> {
    await this.call('POST', '/jobs/ack', { body: { token, requeue }, ok: [200, 204] });
  }

  acquireLease(
    session: string,
    stageId: number,
    body: StageLeaseRequest,
    traceparent?: string,
  ): Promise<StageLeaseResponse> {
    return this.lease('acquire', session, stageId, body, traceparent);
  }

  renewLease(
    session: string,
    stageId: number,
    body: StageLeaseRequest,
    traceparent?: string,
  ): Promise<StageLeaseResponse> {
    return this.lease('renew', session, stageId, body, traceparent);
  }

  async submitResult(
    session: string,
    body: StageResultSubmit,
    traceparent?: string,
  ): Promise<StageResultAccepted> {
    const path = `/stages/${body.stageId}/result`;
    const json = await this.call('POST', path, {
      body,
      apiKey: true,
      session,
      traceparent,
      ok: [200, 202],
    });
    const r = isObject(json) ? json : {};
    return {
      accepted: r.accepted !== false,
      stageId: typeof r.stageId === 'number' ? r.stageId : body.stageId,
      executionId: typeof r.executionId === 'string' ? r.executionId : body.executionId,
      ...(typeof r.acked === 'boolean' ? { acked: r.acked } : {}),
      ...(body.next && 'next' in r
        ? { next: await this.nextFrom(r.next, path, body.next.queue) }
        : {}),
    };
  }

  /**
   * The delivery a result's `next` brought, or null. The result is accepted either way: a delivery
   * that cannot be run is acknowledged so it is not redelivered, as a pulled one would be.
   */
  private async nextFrom(
    json: unknown,
    path: string,
    queue: string,
  ): Promise<PullJobResponse | null> {
    if (!isObject(json)) return null;
    try {
      return deliveryFrom(json, `${path} next`, queue);
    } catch (err) {
      if (err instanceof MalformedDeliveryError) await this.ack(err.token).catch(() => undefined);
      return null;
    }
  }

  private async lease(
    op: 'acquire' | 'renew',
    session: string,
    stageId: number,
    body: StageLeaseRequest,
    traceparent: string | undefined,
  ): Promise<StageLeaseResponse> {
    const path = `/stages/${stageId}/lease/${op}`;
    const r = asObject(
      await this.call('POST', path, { body, session, traceparent, ok: [200] }),
      path,
    );
    const lease = leaseFrom(r);
    if (!lease) throw new ProtocolError(`${path}: response has no acquired`);
    return lease;
  }

  private async call(method: string, path: string, o: CallOptions): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    if (o.apiKey) headers['x-api-key'] = this.options.apiKey;
    const session = o.session ?? this.routingSession;
    if (session !== undefined) headers['x-worker-session'] = session;
    if (o.traceparent !== undefined) headers.traceparent = o.traceparent;
    // One controller and one timer per call: AbortSignal.timeout and AbortSignal.any cost far more
    // per request (transferable signals, weak references) on the path every stage takes four times.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(
        new Error(`request timed out after ${o.timeoutMs ?? this.options.requestTimeoutMs} ms`),
      );
    }, o.timeoutMs ?? this.options.requestTimeoutMs);
    const outer = o.signal;
    const onAbort = () => controller.abort(outer?.reason);
    if (outer?.aborted) onAbort();
    else outer?.addEventListener('abort', onAbort, { once: true });
    let status: number;
    let text: string;
    let retryAfter: string | null;
    try {
      const res = await this.fetch(this.baseUrl + path, {
        method,
        headers,
        ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }),
        signal: controller.signal,
      });
      status = res.status;
      retryAfter = res.headers.get('retry-after');
      text = await res.text();
    } catch (err) {
      if (outer?.aborted) throw outer.reason ?? err;
      throw new TransportError(method, path, timedOut, err);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    }
    if (!o.ok.includes(status)) {
      const problem = parseJson(text);
      const code = isObject(problem) && typeof problem.code === 'string' ? problem.code : undefined;
      const detail =
        isObject(problem) && typeof problem.detail === 'string' ? problem.detail : undefined;
      throw new ApiError(method, path, status, code, detail, parseRetryAfter(retryAfter));
    }
    if (text.trim() === '') return undefined;
    const json = parseJson(text);
    if (json === undefined) throw new ProtocolError(`${method} ${path}: response is not JSON`);
    return json;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asObject(value: unknown, path: string): JsonObject {
  if (!isObject(value)) throw new ProtocolError(`${path}: response is not a JSON object`);
  return value;
}

/** A StageLeaseResponse, from a lease call or a pull's `lease`; undefined without `acquired`. */
function leaseFrom(r: JsonObject): StageLeaseResponse | undefined {
  if (typeof r.acquired !== 'boolean') return undefined;
  return {
    acquired: r.acquired,
    attempt: typeof r.attempt === 'number' ? r.attempt : null,
    leaseExpiresAt: typeof r.leaseExpiresAt === 'string' ? r.leaseExpiresAt : null,
    reason: typeof r.reason === 'string' ? r.reason : null,
  };
}

/** A PullJobResponse as the SDK uses it; MalformedDeliveryError when its payload cannot be run. */
function deliveryFrom(json: unknown, path: string, queue: string): PullJobResponse {
  const r = asObject(json, path);
  if (typeof r.token !== 'string' || r.token === '') {
    throw new ProtocolError(`${path}: response has no token`);
  }
  const payload = r.payload as Partial<Record<string, unknown>> | null | undefined;
  if (
    typeof payload !== 'object' ||
    payload === null ||
    !Number.isSafeInteger(payload.stageId) ||
    !Number.isSafeInteger(payload.pipelineId) ||
    typeof payload.executionId !== 'string' ||
    payload.executionId === ''
  ) {
    throw new MalformedDeliveryError(
      r.token,
      `${path}: payload lacks stageId, pipelineId or executionId`,
    );
  }
  const lease = isObject(r.lease) ? leaseFrom(r.lease) : undefined;
  return {
    ...(lease ? { lease } : {}),
    ...(r.backlog === true ? { backlog: true } : {}),
    token: r.token,
    queue: typeof r.queue === 'string' ? r.queue : queue,
    messageId: typeof r.messageId === 'string' ? r.messageId : '',
    headers: isObject(r.headers) ? r.headers : {},
    payload: {
      ...payload,
      input: typeof payload.input === 'string' ? payload.input : '',
      pipelineContextItems: Array.isArray(payload.pipelineContextItems)
        ? payload.pipelineContextItems
        : [],
      previousAttempts: Number.isSafeInteger(payload.previousAttempts)
        ? payload.previousAttempts
        : 0,
      timeOutSeconds: typeof payload.timeOutSeconds === 'number' ? payload.timeOutSeconds : null,
    } as PullJobResponse['payload'],
  };
}
