// Who a case speaks as and what it aims at: the actor (A, B, anonymous, bad credentials), the
// resources its path names (the actor's own, A's, or made up), and the members of a valid-ish
// body that name resources or credentials (bound to them so the request reaches the handler).

// prettier-ignore
const FAR_CRONS = ['0 0 1 1 *', '30 4 29 2 *', '@every 24h', '@daily', '0 3 * * 0', '15 2 1 * *', '@every 90m', '0 0 * * *'];
// prettier-ignore
const ZONES = ['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Chatham'];

export function actorFor(d, world, name) {
  const { A, B } = world.fixtures.apps;
  const play = A.workers.filter((w) => w.role === 'play');
  switch (name) {
    case 'A':
      return { name, app: A, key: A.apiKey, session: d.pick(play) };
    case 'B':
      return { name, app: B, key: B.apiKey, session: d.pick(B.workers) };
    case 'anon':
      return { name, app: null };
    default: {
      const bad = world.fixtures.badCredentials;
      return {
        name: 'bad',
        app: null,
        key: d.pick(bad.keys),
        session: {
          workerId: d.pick([...A.workers, ...B.workers]).workerId,
          sessionToken: d.pick(bad.sessions),
        },
      };
    }
  }
}

/** Picks from the actor's own resources, A's (a foreign pick for any other actor), or made-up ones. */
function chooser(d, actor, force) {
  const own = actor.name === 'A' ? 'A' : actor.name === 'B' ? 'B' : null;
  return (kind, ownList, foreignList, random) => {
    let from;
    if (force && foreignList.length) from = 'foreign';
    else if (own === 'A') from = d.weighted({ own: ownList.length ? 85 : 0, random: 15 });
    else if (own === 'B')
      from = d.weighted({
        own: ownList.length ? 55 : 0,
        foreign: foreignList.length ? 30 : 0,
        random: 15,
      });
    else
      from = d.weighted({
        foreign: foreignList.length ? 40 : 0,
        own: ownList.length ? 40 : 0,
        random: 20,
      });
    if (from === 'own') return { value: d.pick(ownList), foreign: false };
    if (from === 'foreign') return { value: d.pick(foreignList), foreign: own !== 'A' };
    return { value: random(), foreign: false };
  };
}

/** A made-up id; never one of A's sentinels for A itself (A may change what it aims at). */
const randomId = (d, avoid) => {
  const id = d.pick([1, 2, 3, 7, 42, 1000, 999_999, 2 ** 31 - 1, 2 ** 31, 2 ** 53 - 1]);
  return avoid?.has(id) ? 900_000_000 + d.int(0, 1000) : id;
};

/** The resources a case aims at: path parameters and the ids its body refers to. */
export function chooseTargets(d, world, actor, op, force) {
  const { A, B } = world.fixtures.apps;
  const ownApp = actor.name === 'B' ? B : A;
  const choose = chooser(d, actor, force);
  // `foreign` is set by the body's members (bindBody); the path's are judged once it is built.
  const t = { foreign: false };
  const mark = (r) => r.value;
  const ownPipelines =
    actor.name === 'A' ? A.pipelines.filter((p) => p.role === 'play') : B.pipelines;
  const ownStages = actor.name === 'A' ? A.stages.filter((s) => s.role === 'play') : B.stages;
  const workerOp = op.template.includes('/lease/') || op.template.endsWith('/result');
  const avoidP = actor.name === 'A' ? world.sentinelIds.pipelines : undefined;
  const avoidS = actor.name === 'A' ? world.sentinelIds.stages : undefined;
  const stagePool = (list) =>
    workerOp && list.some((s) => s.executionId) ? list.filter((s) => s.executionId) : list;
  t.pipeline = mark(
    choose(
      'pipeline',
      actor.name === 'anon' || actor.name === 'bad'
        ? [...ownPipelines, ...B.pipelines]
        : ownPipelines,
      A.pipelines,
      () => ({ id: randomId(d, avoidP) }),
    ),
  );
  t.stage = mark(
    choose(
      'stage',
      stagePool(actor.name === 'A' || actor.name === 'B' ? ownStages : B.stages),
      stagePool(
        op.template.endsWith('/resume')
          ? A.stages.filter((s) => s.waiting).concat(A.stages)
          : A.stages,
      ),
      () => ({ id: randomId(d, avoidS), pipelineId: randomId(d, avoidP) }),
    ),
  );
  const ownNames =
    actor.name === 'A'
      ? A.schedules.filter((s) => s.role === 'play').map((s) => s.name)
      : B.schedules.map((s) => s.name);
  // PUT may create B's own schedule of A's name: only A's 'put' schedule is ever named there, and
  // it is named nowhere else, so a later read of the other names by B must still fail.
  const forPut = op.key === 'PUT /schedules/{name}';
  const foreignNames = A.schedules
    .filter((s) => (s.role === 'put') === forPut)
    .flatMap((s) => [s.name, s.name.toUpperCase()]);
  t.scheduleName = mark(
    choose('schedule', ownNames, foreignNames, () => `fz-sched-${d.int(0, 40)}`),
  );
  t.worker = mark(
    choose('worker', actor.session ? [actor.session] : ownApp.workers, A.workers, () => ({
      workerId: d.uuid(),
    })),
  );
  return t;
}

/** Fills the members that name resources or credentials so a valid-ish body reaches the handler. */
export function bindBody(d, world, actor, op, targets, value, force) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const { A, B } = world.fixtures.apps;
  const fx = world.fixtures;
  const own = actor.name === 'B' ? B : A;
  const ownHandlers = actor.name === 'A' ? A.handlers.play : B.handlers.play;
  const choose = chooser(d, actor, force);
  const often = (p = 0.85) => d.chance(p);
  const foreignUse = (r) => {
    targets.foreign ||= r.foreign;
    return r.value;
  };
  const queueOf = (appId, handler) => `app_${appId}_${handler}_StageNext`;
  const visit = (obj) => {
    if (obj === null || typeof obj !== 'object') return;
    if (Array.isArray(obj)) return obj.forEach(visit);
    for (const key of Object.keys(obj)) {
      switch (key) {
        case 'workerId':
          if (op.template.startsWith('/workers/') || op.template.includes('/lease/')) {
            if (op.template.includes('/lease/') && often(0.9))
              obj[key] = actor.session?.workerId ?? obj[key];
            else if (often())
              obj[key] = foreignUse(
                choose('worker', actor.session ? [actor.session] : [], A.workers, () => ({
                  workerId: d.uuid(),
                })),
              ).workerId;
          }
          break;
        case 'executionId':
          if (often(0.75)) obj[key] = targets.stage.executionId ?? d.uuid();
          else if (often(0.5)) obj[key] = d.uuid();
          break;
        case 'attempt':
          if (often(0.75)) obj[key] = targets.stage.attempt ?? 1;
          break;
        case 'stageId':
          if (op.template.endsWith('/result') && often()) obj[key] = targets.stage.id;
          break;
        case 'pipelineId':
          if (op.template.endsWith('/result'))
            obj[key] =
              d.weighted({ same: 6, none: 2, other: 2 }) === 'same'
                ? targets.stage.pipelineId
                : d.chance(0.5)
                  ? null
                  : randomId(d, world.sentinelIds.pipelines);
          break;
        case 'queue':
          if (often(0.95)) {
            const r = choose(
              'queue',
              ownHandlers.concat(fx.handlerPool).map((h) => queueOf(own.applicationId, h)),
              A.handlers.play.concat(A.handlers.sentinel).map((h) => queueOf(A.applicationId, h)),
              () =>
                d.pick([
                  `app_${own.applicationId}_${d.int(0, 5)}_StageNext`,
                  'app__StageNext',
                  'bull:x',
                  'x',
                ]),
            );
            obj[key] = foreignUse(r);
          }
          break;
        case 'waitSeconds':
          if (often(0.95)) obj[key] = d.chance(0.9) ? 0 : 1;
          break;
        case 'token':
          if (often(0.5) && own.deliveryTokens.length) obj[key] = d.pick(own.deliveryTokens);
          break;
        case 'idempotencyKey':
          if (op.key === 'POST /pipelines/by-idempotency-key')
            obj[key] = foreignUse(
              choose(
                'idem',
                own.idempotencyKeys.lookup.concat(own.idempotencyKeys.create),
                A.idempotencyKeys.lookup,
                () => `fz-idem-${d.int(0, 60)}`,
              ),
            );
          else if (often())
            obj[key] = force
              ? d.pick(A.idempotencyKeys.create)
              : actor.name === 'B' && d.chance(0.1)
                ? d.pick(A.idempotencyKeys.create)
                : `fz-idem-${actor.name}-${d.int(0, 60)}`;
          break;
        case 'stageHandlerName':
          if (often(0.8)) obj[key] = d.pick(fx.handlerPool);
          break;
        case 'handlers':
          if (often()) obj[key] = fx.handlerPool.slice(0, d.int(0, fx.handlerPool.length));
          break;
        case 'instanceId':
          // Never A's own instances for A (a re-bootstrap would end the fixture sessions).
          if (force || (actor.name === 'B' && d.chance(0.15)))
            obj[key] = d.pick(A.workers).instanceId;
          else if (often()) obj[key] = `fz-inst-${actor.name}-${d.int(0, 30)}`;
          break;
        case 'dependsOn':
          if (often()) obj[key] = [];
          break;
        case 'apiKey':
          // (POST /logs is bound below.)
          if (op.key === 'POST /logs') break;
          obj[key] = actor.key ?? obj[key];
          if (actor.name === 'anon') delete obj[key];
          break;
        case 'intervalSeconds':
          // Schedules that fire during the run would flood it with pipelines.
          if (often()) obj[key] = d.int(3600, 31_536_000);
          break;
        case 'timeZone':
          if (often()) obj[key] = d.pick(ZONES);
          break;
        case 'timeOut':
        case 'retryInterval':
        case 'maxRetries':
        case 'maxRetryInterval':
          if (often())
            obj[key] = d.int(key === 'maxRetries' || key === 'retryInterval' ? 0 : 1, 600);
          break;
        default:
      }
      visit(obj[key]);
    }
    if (op.template === '/schedules/{name}' && obj === value && often(0.85)) {
      delete obj.cronExpression;
      delete obj.intervalSeconds;
      delete obj.runAt;
      if (obj.kind === 'Cron') obj.cronExpression = d.pick(FAR_CRONS);
      else if (obj.kind === 'Interval') obj.intervalSeconds = d.int(3600, 31_536_000);
      else
        obj.runAt = new Date(
          Date.UTC(2030 + d.int(0, 30), d.int(0, 11), d.int(1, 28)),
        ).toISOString();
    }
  };
  visit(value);
  if (op.key === 'POST /pipelines' && actor.key !== undefined && often(0.9))
    value.apiKey = actor.key;
  if (op.key === 'POST /logs') {
    // (Not A's expired key: POST /logs ignores expiry, so it would rightly answer A's applicationId.)
    if (actor.key !== undefined && actor.key !== fx.badCredentials.expiredKey && often(0.5))
      value.apiKey = actor.key;
    else if (value.apiKey === fx.badCredentials.expiredKey || actor.name === 'anon')
      delete value.apiKey;
    if (force) value.pipelineId = d.pick(A.pipelines).id;
  }
  return value;
}
