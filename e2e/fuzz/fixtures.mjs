// The world a fuzz run aims at: application A (the victim) and application B (the attacker),
// each with keys, worker sessions, pipelines, stages in every interesting state and schedules.
// Every string A owns carries the run's marker (`fzm…`), and one sensitive context value is the
// run's secret: the leak oracle searches each response given to anyone but A for them.
// A's "sentinel" resources are only ever aimed at by other applications; verifySentinels() checks
// at the end that nothing about them changed (no cross-tenant write).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from '../../deploy/local/stack.mjs';
import { caseSeed } from './dice.mjs';
import { watchSentinels } from './sentinels.mjs';

const run = promisify(execFile);

/** The admin command of the api-gateway (dist), with the services' environment. */
export function adminRunner(env) {
  return async (...args) => {
    const { stdout } = await run(
      process.execPath,
      ['services/api-gateway/dist/admin/cli.js', ...args],
      { cwd: ROOT, env },
    );
    return JSON.parse(stdout);
  };
}

async function call(base, method, path, { key, session, json } = {}) {
  const headers = { 'content-type': 'application/json' };
  if (key) headers['x-api-key'] = key;
  if (session) headers['x-worker-session'] = session;
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: json === undefined ? undefined : JSON.stringify(json),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function expectStatus(what, promise, ...statuses) {
  const r = await promise;
  if (!statuses.includes(r.status))
    throw new Error(
      `fuzz setup: ${what} answered ${r.status}: ${JSON.stringify(r.body)?.slice(0, 500)}`,
    );
  return r.body;
}

async function waitFor(what, check, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`fuzz setup: timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * Creates both applications and their resources. `admin(...args)` runs the admin command.
 * Returns the fixtures (see cases.mjs for how they are used) with stop() and verifySentinels().
 */
export async function setupFixtures({ apiUrl, workerUrl, admin, seed }) {
  const tag = caseSeed(seed, 0x7fffffff).toString(36);
  const M = `fzm${tag}`;
  const secret = `fzsecret${caseSeed(seed, 0x7ffffffe).toString(36)}x${tag}`;
  const api = (method, path, opts) => call(apiUrl, method, path, opts);
  const wg = (method, path, opts) => call(workerUrl, method, path, opts);

  const a = await admin('apps', 'create', '--name', `${M}-application`);
  const b = await admin('apps', 'create', '--name', 'fz-attacker');
  const expired = await admin(
    'apps',
    'keys',
    'create',
    '--app',
    String(a.applicationId),
    '--expires-at',
    '2001-01-01T00:00:00Z',
  );
  const disabled = await admin('apps', 'keys', 'create', '--app', String(a.applicationId));
  await admin('apps', 'keys', 'disable', '--key-id', String(disabled.keyId));

  const app = (created, prefix) => ({
    applicationId: created.applicationId,
    apiKey: created.apiKey,
    prefix,
    workers: [],
    pipelines: [],
    stages: [],
    schedules: [],
    deliveryTokens: [],
    idempotencyKeys: { lookup: [], create: [] },
    handlers: {
      play: [`${prefix}-hp1`, `${prefix}-hp2`],
      sentinel: [`${prefix}-hs1`, `${prefix}-hs2`, `${prefix}-hs3`],
    },
  });
  const A = app(a, M);
  const B = app(b, 'fzB');
  B.handlers.sentinel = [];

  const bootstrap = async (who, instanceId, role, handlers) => {
    const body = await expectStatus(
      `bootstrap ${instanceId}`,
      wg('POST', '/workers/bootstrap', {
        key: who.apiKey,
        json: {
          instanceId,
          workerName: `${who.prefix}-worker-${role}`,
          hostname: `${who.prefix}-host`,
          sdkVersion: `${who.prefix}-sdk`,
          handlers,
          metadata: { note: `${who.prefix}-meta-${role}` },
        },
      }),
      200,
    );
    const worker = { workerId: body.workerId, instanceId, sessionToken: body.sessionToken, role };
    who.workers.push(worker);
    return worker;
  };
  const sentinelWorker = await bootstrap(A, `${M}-inst-sentinel`, 'sentinel', A.handlers.sentinel);
  const playWorker = await bootstrap(A, `${M}-inst-play`, 'play', A.handlers.play);
  // A superseded session: bootstrapping the same instance again ends the first token.
  const old = await bootstrap(A, `${M}-inst-old`, 'play', []);
  A.workers.pop();
  const renewed = await bootstrap(A, `${M}-inst-old`, 'play', []);
  void renewed;
  const bWorker = await bootstrap(B, 'fzB-inst-1', 'own', B.handlers.play);
  await expectStatus(
    'worker events',
    wg('POST', '/workers/events', {
      session: sentinelWorker.sessionToken,
      json: {
        workerId: sentinelWorker.workerId,
        events: [{ kind: 'custom', message: `${M}-event`, data: { note: `${M}-event-data` } }],
      },
    }),
    200,
  );

  const create = async (who, role, handler, idem, kind) => {
    const stages = [
      {
        stageName: `${who.prefix}-stage-1`,
        stageHandlerName: handler,
        input: `${who.prefix}-input`,
        description: `${who.prefix}-description`,
      },
      {
        stageName: `${who.prefix}-stage-2`,
        stageHandlerName: handler,
        input: `${who.prefix}-input-2`,
      },
    ];
    const body = await expectStatus(
      `create ${role} pipeline`,
      api('POST', '/pipelines/idempotent', {
        key: who.apiKey,
        json: {
          idempotencyKey: idem,
          name: `${who.prefix}-pipeline-${role}`,
          traceId: `${who.prefix}-trace`.slice(0, 36),
          stages,
          policies: [{ note: `${who.prefix}-policy` }],
          pipelineKeywords: [{ key: `${who.prefix}-kw`, value: `${who.prefix}-kw-value` }],
          pipelineContextItems: [
            { key: `${who.prefix}-ctx`, value: `${who.prefix}-ctx-value` },
            ...(who === A ? [{ key: `${M}-password`, value: secret, isSensitive: true }] : []),
          ],
        },
      }),
      201,
    );
    const p = body.pipeline;
    const entry = { id: p.id, role, handler, stageIds: p.stages.map((s) => s.id) };
    who.pipelines.push(entry);
    p.stages.forEach((s) => who.stages.push({ id: s.id, pipelineId: p.id, role }));
    who.idempotencyKeys[kind].push(idem);
    return entry;
  };
  const pending = await create(A, 'sentinel', A.handlers.sentinel[0], `${M}-idem-1`, 'lookup');
  const waiting = await create(A, 'sentinel', A.handlers.sentinel[1], `${M}-idem-2`, 'create');
  const running = await create(A, 'sentinel', A.handlers.sentinel[2], `${M}-idem-3`, 'lookup');
  const play1 = await create(A, 'play', A.handlers.play[0], `${M}-idem-4`, 'create');
  const play2 = await create(A, 'play', A.handlers.play[1], `${M}-idem-5`, 'lookup');
  const bPipes = [];
  for (let i = 0; i < 3; i++)
    bPipes.push(await create(B, 'own', B.handlers.play[i % 2], `fzB-idem-${i}`, 'lookup'));
  await expectStatus(
    'legacy create',
    api('POST', '/pipelines', {
      json: {
        apiKey: A.apiKey,
        name: `${M}-legacy`,
        stages: [{ stageName: `${M}-legacy-stage`, stageHandlerName: A.handlers.play[0] }],
      },
    }),
    200,
  );

  const stageOf = (who, id) => who.stages.find((s) => s.id === id);
  const dispatched = (who, pipeline) =>
    waitFor(`pipeline ${pipeline.id} dispatched`, async () => {
      const r = await api('GET', `/pipelines/${pipeline.id}`, { key: who.apiKey });
      return r.body?.stages?.[0]?.status === 'Pending' ? r.body : undefined;
    });
  /** Pulls the first stage of `pipeline`, leases it with `worker`: its execution is known then. */
  const lease = async (who, pipeline, worker) => {
    await dispatched(who, pipeline);
    const pulled = await expectStatus(
      'pull',
      wg('POST', '/jobs/pull', {
        key: who.apiKey,
        json: { queue: `app_${who.applicationId}_${pipeline.handler}_StageNext`, waitSeconds: 10 },
      }),
      200,
    );
    const { executionId, stageId } = pulled.payload;
    const granted = await expectStatus(
      'lease acquire',
      wg('POST', `/stages/${stageId}/lease/acquire`, {
        session: worker.sessionToken,
        json: { executionId, workerId: worker.workerId },
      }),
      200,
    );
    if (!granted.acquired) throw new Error(`fuzz setup: lease refused: ${JSON.stringify(granted)}`);
    Object.assign(stageOf(who, stageId), { executionId, attempt: granted.attempt });
    return { token: pulled.token, executionId, stageId, attempt: granted.attempt };
  };

  // Sentinel "waiting": first stage WaitingForApproval, with a stage log and context from a result.
  const w = await lease(A, waiting, sentinelWorker);
  await expectStatus(
    'result',
    wg('POST', `/stages/${w.stageId}/result`, {
      key: A.apiKey,
      session: sentinelWorker.sessionToken,
      json: {
        stageId: w.stageId,
        executionId: w.executionId,
        attempt: w.attempt,
        isSuccess: true,
        isWaitingForApproval: true,
        result: `${M}-output`,
        logs: [{ message: `${M}-stage-log` }],
        contextItems: [{ key: `${M}-ctx-2`, value: `${M}-ctx-2-value` }],
      },
    }),
    202,
  );
  await expectStatus('ack', wg('POST', '/jobs/ack', { json: { token: w.token } }), 200);
  await waitFor('stage waiting for approval', async () => {
    const r = await api('GET', `/pipelines/${waiting.id}`, { key: A.apiKey });
    return r.body?.stages?.[0]?.status === 'WaitingForApproval' ? true : undefined;
  });
  stageOf(A, w.stageId).waiting = true;
  // Sentinel "running": leased and renewed for the whole run.
  const r = await lease(A, running, sentinelWorker);
  await expectStatus('ack', wg('POST', '/jobs/ack', { json: { token: r.token } }), 200);
  const watch = watchSentinels({ api, wg, A, M, sentinelWorker, running, lease: r });
  // Play: a leased stage of A's play worker (its delivery token unacked), one of B.
  const p = await lease(A, play2, playWorker);
  A.deliveryTokens.push(p.token);
  const bl = await lease(B, bPipes[0], bWorker);
  B.deliveryTokens.push(bl.token);
  await dispatched(A, pending);
  await dispatched(A, play1);

  const schedule = async (who, name, role, body) => {
    const s = await expectStatus(
      `schedule ${name}`,
      api('PUT', `/schedules/${encodeURIComponent(name)}`, { key: who.apiKey, json: body }),
      201,
    );
    who.schedules.push({ name, role, id: s.id });
    return s;
  };
  const definition = (who, handler) => ({
    name: `${who.prefix}-scheduled`,
    stages: [
      {
        stageName: `${who.prefix}-scheduled-stage`,
        stageHandlerName: handler,
        input: `${who.prefix}-scheduled-input`,
      },
    ],
    pipelineKeywords: [{ key: `${who.prefix}-kw`, value: `${who.prefix}-sched-kw` }],
  });
  await schedule(A, `${M}-schedule-sentinel`, 'sentinel', {
    kind: 'Cron',
    cronExpression: '0 0 1 1 *',
    definition: definition(A, A.handlers.sentinel[0]),
  });
  await schedule(A, `${M}-schedule-play`, 'play', {
    kind: 'Interval',
    intervalSeconds: 86_400,
    definition: definition(A, A.handlers.play[0]),
  });
  // The name B's PUT probes use: B may make its own schedule of that name, so no other probe uses it.
  await schedule(A, `${M}-schedule-put`, 'put', {
    kind: 'Cron',
    cronExpression: '0 0 1 1 *',
    definition: definition(A, A.handlers.play[0]),
  });
  await schedule(B, 'fzB-schedule-1', 'own', {
    kind: 'Cron',
    cronExpression: '0 0 1 1 *',
    definition: definition(B, B.handlers.play[0]),
  });
  await expectStatus(
    'log',
    api('POST', '/logs', {
      json: {
        apiKey: A.apiKey,
        message: `${M}-system-log`,
        pipelineId: pending.id,
        keywords: [{ key: `${M}-kw`, value: `${M}-log-kw` }],
      },
    }),
    200,
  );

  const baseline = await watch.snapshot();

  return {
    marker: M,
    secret,
    apps: { A, B },
    handlerPool: ['fz-h1', 'fz-h2', 'fz-h3'],
    badCredentials: {
      keys: [
        '',
        'pos_',
        `pos_${'A'.repeat(43)}`,
        `${A.apiKey.slice(0, -1)}${A.apiKey.endsWith('x') ? 'y' : 'x'}`,
        A.apiKey.toUpperCase(),
        'x'.repeat(5000),
        `Bearer ${B.apiKey}`,
        `${B.apiKey}${B.apiKey}`,
        'null',
        expired.apiKey,
        disabled.apiKey,
        `${A.apiKey.slice(0, 20)}`,
      ],
      expiredKey: expired.apiKey,
      sessions: [
        '',
        'pws_x',
        `pws_${'B'.repeat(43)}`,
        old.sessionToken,
        `${sentinelWorker.sessionToken.slice(0, -2)}zz`,
        'x'.repeat(3000),
      ],
    },
    /**
     * A's strings that B's probes send as B's own data (a schedule name, creation idempotency keys,
     * worker instance ids): B's own resources may carry them back, so they alone prove no leak.
     */
    writableByB: new Set([
      `${M}-schedule-put`,
      ...A.idempotencyKeys.create,
      ...A.workers.map((x) => x.instanceId),
      `${M}-inst-old`,
    ]),
    /** What must never reach anyone but A: marker, secret, A's credentials and opaque ids. */
    secretsOfA: {
      strings: [
        A.apiKey,
        expired.apiKey,
        disabled.apiKey,
        ...A.workers.map((x) => x.sessionToken),
        old.sessionToken,
        ...A.workers.map((x) => x.workerId),
        ...A.stages.filter((s) => s.executionId).map((s) => s.executionId),
        ...A.deliveryTokens,
        w.token,
        r.token,
      ],
      pipelineIds: new Set(A.pipelines.map((x) => x.id)),
      stageIds: new Set(A.stages.map((x) => x.id)),
      scheduleIds: new Set(A.schedules.map((x) => x.id)),
      applicationId: A.applicationId,
    },
    baseline,
    stop: watch.stop,
    /** Differences between A's sentinels now and before the run (each one a cross-tenant write). */
    verifySentinels: () => watch.verify(baseline),
  };
}
