// What the dashboard's stage graph shows of a stage's current attempt (issue 13): the lease holder
// and the attempt's start and end, from the stage's current execution; and conditional GET on the
// reads a dashboard polls (decision 0093): a strong ETag, 304 while unchanged, never cached.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, idempotentPipelineCreateResponseSchema, pipelineResponseSchema, type PipelineResponse } from '@po/contracts';
import { startGateway, type Gateway } from '../../testing/harness.js';

let gw: Gateway;
const shapes = {
  created: compile(idempotentPipelineCreateResponseSchema, { normalise: false }),
  pipeline: compile(pipelineResponseSchema, { normalise: false }),
};

beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

async function create(): Promise<PipelineResponse> {
  const reply = await gw.call('POST', '/pipelines/idempotent', {
    json: {
      idempotencyKey: randomUUID(),
      name: 'graph',
      stages: [
        { stageName: 'a', stageHandlerName: 'h' },
        { stageName: 'b', stageHandlerName: 'h' },
      ],
    },
  });
  expect(reply.status, reply.text).toBe(201);
  const checked = shapes.created(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body.pipeline as PipelineResponse;
}

async function read(id: number): Promise<PipelineResponse> {
  const reply = await gw.call('GET', `/pipelines/${id}`);
  expect(reply.status, reply.text).toBe(200);
  const checked = shapes.pipeline(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body as PipelineResponse;
}

/** The stage's current execution as a lease grant (and optionally its end) leaves it. */
async function execution(stageId: number, lease: { workerId: string | null; leasedAt: Date | null; endedAt: Date | null }) {
  const id = randomUUID();
  await gw.db.$executeRawUnsafe(
    `INSERT INTO stage_executions (id, stage_id, application_id, attempt, lease_owner, leased_at, lease_expires_at, ended_at, end_reason)
     VALUES ($1::uuid, $2, $3, $4, $5, $6, $6::timestamptz + interval '60 seconds', $7, $8)`,
    id,
    stageId,
    gw.appA.id,
    lease.leasedAt ? 1 : null,
    lease.workerId,
    lease.leasedAt,
    lease.endedAt,
    lease.endedAt ? 'result' : null,
  );
  await gw.db.$executeRawUnsafe(`UPDATE stages SET current_execution_id = $1::uuid WHERE id = $2`, id, stageId);
}

describe('stage attempt fields', () => {
  it('are null on creation and before a lease', async () => {
    const p = await create();
    for (const s of p.stages) expect(s).toMatchObject({ workerId: null, attemptStartedAt: null, attemptEndedAt: null });
    await execution(p.stages[0]!.id, { workerId: null, leasedAt: null, endedAt: null });
    expect((await read(p.id)).stages[0]).toMatchObject({ workerId: null, attemptStartedAt: null, attemptEndedAt: null });
  });

  it("name the lease holder and the current attempt's start, then its end", async () => {
    const p = await create();
    const [a, b] = p.stages;
    const leasedAt = new Date('2026-03-01T12:00:00.000Z');
    await execution(a!.id, { workerId: 'worker-7', leasedAt, endedAt: new Date('2026-03-01T12:00:02.500Z') });
    await execution(b!.id, { workerId: 'worker-9', leasedAt: new Date('2026-03-01T12:00:03.000Z'), endedAt: null });
    const stages = (await read(p.id)).stages;
    expect(stages[0]).toMatchObject({ workerId: 'worker-7', attemptStartedAt: '2026-03-01T12:00:00.000Z', attemptEndedAt: '2026-03-01T12:00:02.500Z' });
    expect(stages[1]).toMatchObject({ workerId: 'worker-9', attemptStartedAt: '2026-03-01T12:00:03.000Z', attemptEndedAt: null });
  });
});

describe('conditional GET of the API', () => {
  it('GET /pipelines/{id}: strong ETag and no-store; 304 while unchanged; 200 with a new ETag after a change', async () => {
    const p = await create();
    const first = await gw.call('GET', `/pipelines/${p.id}`);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(first.headers.get('cache-control')).toBe('no-store');
    const same = await gw.call('GET', `/pipelines/${p.id}`, { headers: { 'if-none-match': etag } });
    expect(same.status).toBe(304);
    expect(same.text).toBe('');
    expect(same.headers.get('etag')).toBe(etag);
    expect(same.headers.get('cache-control')).toBe('no-store');
    expect((await gw.call('POST', `/pipelines/${p.id}/cancel`)).status).toBe(200);
    const changed = await gw.call('GET', `/pipelines/${p.id}`, { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(changed.body.status).toBe('Cancelled');
  });

  it("lists and schedules too; another application's key gets its own body, not a 304", async () => {
    const list = await gw.call('GET', '/pipelines?limit=5');
    const etag = list.headers.get('etag')!;
    expect((await gw.call('GET', '/pipelines?limit=5', { headers: { 'if-none-match': etag } })).status).toBe(304);
    const other = await gw.call('GET', '/pipelines?limit=5', { key: gw.appB.key, headers: { 'if-none-match': etag } });
    expect(other.status).toBe(200);
    expect(other.body.items).toEqual([]);
    const schedules = await gw.call('GET', '/schedules');
    expect(schedules.headers.get('etag')).toMatch(/^"/);
  });

  it('errors and writes carry no ETag', async () => {
    const missing = await gw.call('GET', '/pipelines/999999', { headers: { 'if-none-match': '*' } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('etag')).toBeNull();
    const created = await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: randomUUID(), name: 'x', stages: [{ stageName: 'a', stageHandlerName: 'h' }] } });
    expect(created.status).toBe(201);
    expect(created.headers.get('etag')).toBeNull();
    expect(created.headers.get('cache-control')).toBe('no-store');
  });
});
