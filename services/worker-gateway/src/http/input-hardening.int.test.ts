// Issue 10, "Abuse and bad input" (decision 0080), on the worker protocol: bodies read before a
// credential is checked are small, lone surrogates are a 400 at their field (PostgreSQL cannot
// store them), and date-times are bounded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyLimits, type FieldError } from '@po/contracts';
import { startWorkerGateway, type Reply, type WorkerGatewayHarness } from '../testing/harness.js';

let h: WorkerGatewayHarness;
beforeAll(async () => {
  h = await startWorkerGateway();
});
afterAll(async () => {
  await h?.close();
});

const TWO_MIB_OF_ZEROS = `[${'0,'.repeat(999_999)}0]`;

function expectProblem(reply: Reply, status: number, code: string, fields?: string[]): void {
  expect(reply.status, reply.text.slice(0, 300)).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(reply.body).toMatchObject({ status, code });
  if (fields) expect((reply.body.errors as FieldError[]).map((e) => e.field)).toEqual(fields);
}

describe('bodies read before a credential is checked are small', () => {
  it('POST /jobs/ack (no credentials) and the session routes answer a ~2 MiB body of [0,0,…] with 413', async () => {
    expectProblem(
      await h.call('POST', '/jobs/ack', { raw: `{"token":"t","pad":${TWO_MIB_OF_ZEROS}}` }),
      413,
      'payload_too_large',
    );
    const session = { 'x-worker-session': 'any' };
    for (const path of ['/workers/heartbeat', '/workers/shutdown']) {
      expectProblem(
        await h.call('POST', path, {
          raw: `{"workerId":"w","pad":${TWO_MIB_OF_ZEROS}}`,
          headers: session,
        }),
        413,
        'payload_too_large',
      );
    }
    // Events may carry 100 events of 16 KiB data and 4000-character messages: the limit is that, and
    // no more. Such a batch is read only for a live session (a dead one is 401 first).
    const events = `{"workerId":"w","events":[${'0,'.repeat(bodyLimits.workerEvents(100) / 2)}0]}`;
    expectProblem(
      await h.call('POST', '/workers/events', { raw: events, headers: session }),
      401,
      'unauthorized',
    );
    const live = await h.bootstrap('i-events', ['h']);
    expectProblem(
      await h.call('POST', '/workers/events', { raw: events, headers: { 'x-worker-session': live.sessionToken } }),
      413,
      'payload_too_large',
    );
  });
});

describe('a "__proto__" member name is a 400 at its object, never a 500', () => {
  it('in bootstrap metadata and event data', async () => {
    const bootstrap = await h.call('POST', '/workers/bootstrap', {
      raw: '{"instanceId":"i-p","handlers":["h"],"metadata":{"a":{"__proto__":null}}}',
      headers: { 'x-api-key': h.appA.key },
    });
    expectProblem(bootstrap, 400, 'validation_failed', ['/metadata/a']);
    const worker = await h.bootstrap('i-p', ['h']);
    const events = await h.call('POST', '/workers/events', {
      raw: `{"workerId":"${worker.workerId}","events":[{"kind":"custom","data":{"\\u005f_proto__":{}}}]}`,
      headers: { 'x-worker-session': worker.sessionToken },
    });
    expectProblem(events, 400, 'validation_failed', ['/events/0/data']);
  });
});

describe('lone surrogates and date-times out of range are 400s at their field, never 500s', () => {
  it('bootstrap metadata, event data, event message and event at', async () => {
    const bootstrap = await h.call('POST', '/workers/bootstrap', {
      raw: '{"instanceId":"i-1","handlers":["h"],"metadata":{"zone":"\\ud800"}}',
      headers: { 'x-api-key': h.appA.key },
    });
    expectProblem(bootstrap, 400, 'validation_failed', ['/metadata/zone']);
    const worker = await h.bootstrap('i-1', ['h']);
    const events = (raw: string) =>
      h.call('POST', '/workers/events', {
        raw: `{"workerId":"${worker.workerId}","events":[{"kind":"custom"},${raw}]}`,
        headers: { 'x-worker-session': worker.sessionToken },
      });
    expectProblem(
      await events('{"kind":"custom","data":{"k":["\\udc00"]}}'),
      400,
      'validation_failed',
      ['/events/1/data/k/0'],
    );
    expectProblem(
      await events('{"kind":"custom","data":{"\\ud800":1}}'),
      400,
      'validation_failed',
      ['/events/1/data'],
    );
    expectProblem(await events('{"kind":"error","message":"\\udbff!"}'), 400, 'validation_failed', [
      '/events/1/message',
    ]);
    expectProblem(
      await events('{"kind":"custom","at":"0000-06-01T00:00:00Z"}'),
      400,
      'validation_failed',
      ['/events/1/at'],
    );
    expect(
      (await events('{"kind":"custom","data":{"k":"\\ud83d\\ude00"},"at":"0001-01-01T00:00:00Z"}'))
        .status,
    ).toBe(200);
  });
});
