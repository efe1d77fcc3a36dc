// One fuzz case from (seed, index): a family, an operation of docs/openapi.json, an actor
// (application A, application B, anonymous, or bad credentials), a valid-ish request built from
// the operation's schema and the fixtures, then the family's mutation. Cases are independent of
// each other and of the responses, so `--seed S --from I --requests 1` rebuilds case I exactly.
import { Dice, caseSeed } from './dice.mjs';
import { rawRequest } from './client.mjs';
import { encoding, malformed, types } from './mutations.mjs';
import { gatewayFor } from './openapi.mjs';
import { actorFor, bindBody, chooseTargets } from './targets.mjs';
import { oversized } from './oversized.mjs';
import { schemaArb, toJsonBuffer } from './schema-values.mjs';
import { encodeSegment, pathFamily, shapePath, wireFamily } from './wire.mjs';

export const FAMILY_WEIGHTS = {
  valid: 20,
  malformed: 11,
  oversized: 9,
  types: 14,
  encoding: 16,
  path: 11,
  crossTenant: 14,
  wire: 5,
};
const BODY_FAMILIES = { malformed, oversized, types, encoding };
/** Oversized bodies above this go over a raw socket (see makeCase). */
const BIG_BODY = 256 * 1024;
/** Variants drawn more often than others (default weight 1): the ones that found bugs before. */
const VARIANT_WEIGHTS = {
  encoding: { loneSurrogate: 3, nul: 2, invalidUtf8: 2, dates: 4 },
  oversized: { declaredOverLimit: 2, longString: 3, hugeArray: 2, deepNesting: 2, atLimits: 3 },
  path: { badId: 3, badName: 2, badQuery: 2 },
};

/**
 * Where a request of B that reaches one of A's resources must not succeed: every operation with a
 * resource in its path (but PUT /schedules/{name}, which makes B's own schedule of that name, and
 * the worker-activity read, scoped to the caller), and those that name it in the body.
 */
const BODY_DENY = new Set([
  'POST /pipelines/by-idempotency-key',
  'POST /workers/heartbeat',
  'POST /workers/events',
  'POST /workers/shutdown',
  'POST /jobs/pull',
]);
// Handler names are a namespace of each application's own (decision 0132): PUT creates B's own
// settings under any name, and a GET answers B's own, so a name of A's there is no probe of A.
const HANDLER_OPS = new Set(['GET /handlers', 'GET /handlers/{name}', 'PUT /handlers/{name}']);
const SCOPED = new Set(['PUT /schedules/{name}', 'GET /workers/{workerId}/events', 'GET /handlers/{name}', 'PUT /handlers/{name}']);
const denies = (op) =>
  BODY_DENY.has(op.key) ||
  (!SCOPED.has(op.key) &&
    op.pathParams.some((p) => ['pipelineId', 'stageId', 'name'].includes(p.name)));
/** Cross-tenant probes: those, plus what B may do with A's names (scoped) and the listings. */
const isProbe = (op) =>
  denies(op) ||
  SCOPED.has(op.key) ||
  [
    'POST /pipelines/idempotent',
    'GET /pipelines',
    'GET /schedules',
    'GET /workers',
    'POST /workers/bootstrap',
    'POST /logs',
  ].includes(op.key);

export function createWorld({ ops, resolve, fixtures, limits, long = false }) {
  const arbs = new Map();
  for (const op of ops) if (op.bodySchema) arbs.set(op.key, schemaArb(op.bodySchema, resolve));
  const byKey = new Map(ops.map((op) => [op.key, op]));
  const hasDates = (schema, seen = new Set()) => {
    const sch = resolve(schema ?? {});
    if (seen.has(sch)) return false;
    seen.add(sch);
    if (sch.format === 'date-time') return true;
    return (
      Object.values(sch.properties ?? {}).some((p) => hasDates(p, seen)) ||
      (sch.items ? hasDates(sch.items, seen) : false)
    );
  };
  return {
    ops,
    byKey,
    resolve,
    fixtures,
    limits,
    long,
    arbs,
    withBody: ops.filter((op) => op.bodySchema),
    withDates: ops.filter((op) => op.bodySchema && hasDates(op.bodySchema)),
    withParams: ops.filter((op) => op.pathParams.length || op.queryParams.length),
    sentinelIds: {
      pipelines: new Set(
        fixtures.apps.A.pipelines.filter((p) => p.role === 'sentinel').map((p) => p.id),
      ),
      stages: new Set(fixtures.apps.A.stages.filter((x) => x.role === 'sentinel').map((x) => x.id)),
    },
    probes: ops.filter(isProbe),
  };
}

/** Trace id of case `index` (also in traceparent): finds the server's log lines of a case. */
export function traceIdOf(seed, index) {
  return `f2${(seed >>> 0).toString(16).padStart(8, '0')}${index.toString(16).padStart(22, '0')}`;
}

function queryFor(d, op) {
  const pairs = [];
  for (const p of op.queryParams) {
    if (!d.chance(0.4)) continue;
    if (p.name === 'limit') pairs.push(`limit=${d.pick([1, 2, 50, 200])}`);
    // GET /pipelines takes several statuses (an array parameter), GET /schedules one.
    if (p.name === 'status') pairs.push(`status=${d.pick(p.schema.enum ?? p.schema.items.enum)}`);
    if (p.name === 'cursor' && d.chance(0.3))
      pairs.push(`cursor=${Buffer.from(`{"after":${d.int(1, 100)}}`).toString('base64url')}`);
  }
  return pairs.join('&');
}

function credentialHeaders(d, op, actor, mixed) {
  const h = {};
  const key = mixed?.key ?? actor.key;
  const session = mixed?.session ?? actor.session;
  if (op.security.includes('ApiKey') && key !== undefined && !d.chance(0.04)) h['x-api-key'] = key;
  if (op.security.includes('WorkerSession') && session && !d.chance(0.04))
    h['x-worker-session'] = session.sessionToken;
  return h;
}

function pickOp(d, world, family) {
  if (family === 'crossTenant') return d.pick(world.probes);
  if (family === 'encoding' && d.chance(0.3)) return d.pick(world.withDates);
  if (family in BODY_FAMILIES && d.chance(0.92)) return d.pick(world.withBody);
  if (family === 'path' && d.chance(0.85)) return d.pick(world.withParams);
  return d.pick(world.ops);
}

function applyVariant(d, family, draft, ctx) {
  const variants = family === 'path' ? pathFamily : BODY_FAMILIES[family];
  const names = Object.keys(variants);
  const weights = Object.fromEntries(names.map((n) => [n, VARIANT_WEIGHTS[family]?.[n] ?? 1]));
  for (let attempt = 0; attempt < 6; attempt++) {
    // The last try is a variant that applies to any request.
    const name =
      attempt < 5
        ? d.weighted(weights)
        : (names.find(
            (n) =>
              n === 'bom' ||
              n === 'badQuery' ||
              n === 'deepNesting' ||
              n === 'swap' ||
              n === 'loneSurrogate',
          ) ?? names[0]);
    const result = variants[name](d, draft, ctx);
    if (result) return result;
  }
  return 'unchanged';
}

/**
 * Whether the body, as finally sent (after any mutation), still names one of A's resources: an
 * idempotency key A looks up, one of A's queues, one of A's workers.
 */
function bodyNamesA(op, body, A) {
  if (!body || !BODY_DENY.has(op.key)) return false;
  const text = body.toString('latin1');
  const names =
    op.key === 'POST /pipelines/by-idempotency-key'
      ? A.idempotencyKeys.lookup
      : op.key === 'POST /jobs/pull'
        ? [...A.handlers.play, ...A.handlers.sentinel].map(
            (h) => `app_${A.applicationId}_${h}_StageNext`,
          )
        : A.workers.map((w) => w.workerId);
  return names.some((n) => text.includes(JSON.stringify(n)));
}

/** Case `index` of the run with `seed`. */
export function makeCase(world, seed, index) {
  const d = new Dice(caseSeed(seed, index));
  const family = d.weighted(FAMILY_WEIGHTS);
  const op = pickOp(d, world, family);
  const force = family === 'crossTenant';
  const actorName = force ? 'B' : d.weighted({ A: 38, B: 38, anon: 12, bad: 12 });
  const actor = actorFor(d, world, actorName);
  // A result with one application's key and the other's session must be refused too.
  const { A } = world.fixtures.apps;
  const mixed =
    force && op.key === 'POST /stages/{stageId}/result' && d.chance(0.3)
      ? d.chance(0.5)
        ? { key: actor.key, session: d.pick(A.workers) }
        : { key: A.apiKey, session: actor.session }
      : undefined;
  const targets = chooseTargets(d, world, actor, op, force);
  const params = {
    // With both in the path, mostly the stage's own pipeline.
    pipelineId: String(
      op.pathParams.some((p) => p.name === 'stageId') && targets.stage.pipelineId && d.chance(0.7)
        ? targets.stage.pipelineId
        : targets.pipeline.id,
    ),
    stageId: String(targets.stage.id),
    name: encodeSegment(targets.scheduleName),
    workerId: encodeSegment(targets.worker.workerId),
  };
  // Parameters this fuzzer has no pool for: a value from their schema.
  for (const p of op.pathParams)
    if (!(p.name in params))
      params[p.name] = encodeSegment(String(d.sample(schemaArb(p.schema ?? {}, world.resolve))));
  let value;
  if (op.bodySchema && !(op.key === 'POST /schedules/{name}/trigger' && d.chance(0.3))) {
    value = bindBody(d, world, actor, op, targets, d.sample(world.arbs.get(op.key)), force);
  }
  const traceId = traceIdOf(seed, index);
  const draft = {
    method: op.method,
    params,
    query: queryFor(d, op),
    value,
    body: undefined,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'po-fuzz',
      traceparent: `00-${traceId}-${index
        .toString(16)
        .padStart(16, '0')
        .slice(-16)
        .replace(/^0{16}$/, '0000000000000001')}-01`,
      ...credentialHeaders(d, op, actor, mixed),
    },
  };
  const ctx = { op, resolve: world.resolve, limits: world.limits, long: world.long };
  let variant = 'valid-ish';
  if (family === 'path') variant = applyVariant(d, 'path', draft, ctx);
  else if (family in BODY_FAMILIES) variant = applyVariant(d, family, draft, ctx);
  else if (force && d.chance(0.25))
    variant = `cross-tenant+${applyVariant(d, d.pick(['types', 'encoding', 'malformed']), draft, ctx)}`;
  else if (force) variant = 'cross-tenant';

  const decoded = (v) => {
    try {
      return decodeURIComponent(v);
    } catch {
      return v;
    }
  };
  const pathForeign = op.pathParams.some(
    (p) =>
      (p.name === 'pipelineId' &&
        A.pipelines.some((x) => String(x.id) === decoded(draft.params.pipelineId))) ||
      (p.name === 'stageId' &&
        A.stages.some((x) => String(x.id) === decoded(draft.params.stageId))) ||
      (p.name === 'name' &&
        A.schedules.some(
          (x) =>
            x.role !== 'put' && x.name.toLowerCase() === decoded(draft.params.name).toLowerCase(),
        )),
  );
  let path = op.template.replace(/\{(\w+)\}/g, (_, name) => draft.params[name]);
  if (draft.query) path += `?${draft.query}`;
  if (draft.shape) path = shapePath(path, draft.shape);
  const body =
    draft.body ??
    (value === undefined && draft.value === undefined ? undefined : toJsonBuffer(draft.value));
  const gateway = d.chance(0.85)
    ? gatewayFor(path)
    : op.service === 'worker-gateway'
      ? 'worker'
      : 'api';

  const c = {
    index,
    family,
    variant,
    op: op.key,
    gateway,
    actor: mixed ? (mixed.key === A.apiKey ? 'A-key+B-session' : 'B-key+A-session') : actor.name,
    method: draft.method,
    path,
    headers: draft.headers,
    body,
    chunked: Boolean(draft.chunked),
    traceId,
    mayClose: Boolean(draft.mayClose),
    head: false,
    timeoutMs:
      world.limits.timeoutMs +
      (op.key === 'POST /jobs/pull' && Number.isInteger(draft.value?.waitSeconds)
        ? Math.min(20, Math.max(0, draft.value.waitSeconds)) * 1000
        : 0),
    checks: {
      // A handler's name is B's own wherever B uses it (a stage, a worker, a PUT): the strings of
      // A's that B's handlers share say nothing. Their isolation is the handlers list test's
      // (services/api-gateway/src/http/handlers/list.int.test.ts).
      leak: (actor.name !== 'A' || mixed !== undefined) && !HANDLER_OPS.has(op.key),
      expectDenied: actor.name === 'B' && (pathForeign || bodyNamesA(op, body, A)) && denies(op),
      unauthenticated:
        (actor.name === 'anon' || actor.name === 'bad') &&
        (op.security.length > 0 || op.key === 'POST /pipelines'),
    },
  };
  const headerList = () => [
    ['host', '127.0.0.1'],
    ...Object.entries(c.headers),
    ['connection', 'close'],
    ...(c.body ? [['content-length', String(c.body.length)]] : []),
  ];
  if (draft.declaredLength !== undefined) {
    c.raw = rawRequest({
      method: c.method,
      target: path,
      headers: [
        ...headerList().filter(([h]) => h !== 'content-length'),
        ['content-length', String(draft.declaredLength)],
      ],
      body: c.body,
    });
  } else if (family === 'oversized' && c.body && c.body.length > BIG_BODY) {
    // On a raw socket: a server that answers 413 and closes before reading it all is seen answering
    // (node:http would report only the EPIPE of its unfinished write).
    const headers = headerList().filter(([h]) => !c.chunked || h !== 'content-length');
    const body = c.chunked
      ? Buffer.concat([
          Buffer.from(`${c.body.length.toString(16)}\r\n`),
          c.body,
          Buffer.from('\r\n0\r\n\r\n'),
        ])
      : c.body;
    c.raw = rawRequest({
      method: c.method,
      target: path,
      headers: c.chunked ? [...headers, ['transfer-encoding', 'chunked']] : headers,
      body,
    });
  } else if (family === 'wire') {
    const bent = wireFamily[d.pick(Object.keys(wireFamily))](d, {
      method: c.method,
      path,
      headers: headerList(),
      body: c.body,
    });
    Object.assign(c, {
      raw: bent.raw,
      variant: bent.variant,
      halfClose: Boolean(bent.halfClose),
      mayClose: Boolean(bent.mayClose),
      head: Boolean(bent.head),
    });
  }
  return c;
}
