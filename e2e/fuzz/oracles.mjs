// What a response must never be: a 5xx, late (a hang), missing, an error that is not
// problem+json, or — for anyone but application A — a carrier of A's data; and what must never
// succeed: B's request on A's resources, an unauthenticated request on an authenticated route.

/** Oracle names, most severe first (the report's order). */
export const ORACLES = [
  '5xx',
  'hang',
  'no-response',
  'cross-tenant-read',
  'secret-leak',
  'cross-tenant-access',
  'unauthenticated-access',
  'not-problem-json',
  'overload-503',
];
/** Oracles whose findings count as cross-tenant in the totals. */
export const CROSS_TENANT = new Set([
  'cross-tenant-read',
  'cross-tenant-access',
  'unauthenticated-access',
  'secret-leak',
  'sentinel-changed',
]);

function problemCode(body) {
  try {
    return JSON.parse(body.toString('utf8')).code;
  } catch {
    return undefined;
  }
}

/**
 * A documented answer to overload rather than a failure: 503 `service_unavailable` with
 * Retry-After (the database is slow; issue 10) or `broker_unavailable` (api-spec: retry the
 * request). Reported apart from the 5xx.
 */
function overload(status, body, headers) {
  if (status !== 503) return false;
  const code = problemCode(body);
  return (
    (code === 'service_unavailable' && headers?.['retry-after'] !== undefined) ||
    code === 'broker_unavailable'
  );
}

/** Everything the request itself carried, so an echo of it is not taken for a leak. */
export function requestText(c) {
  let path = c.path;
  try {
    path = `${c.path} ${decodeURIComponent(c.path)}`;
  } catch {
    // not decodable: the raw form is enough
  }
  const parts = [path, ...Object.values(c.headers ?? {})];
  if (c.body) parts.push(c.body.toString('utf8'));
  if (c.raw) parts.push(c.raw.toString('latin1'), c.raw.toString('utf8'));
  return parts.join('\n');
}

/**
 * A's ids where the server put them: pipelines, stages, schedules, runs and StageNext payloads, by
 * the members that mark each kind. (Worker events and log lines carry ids the caller chose, so a
 * bare `stageId` anywhere proves nothing.)
 */
function idLeaks(json, secrets, numbersInRequest) {
  const found = [];
  const check = (key, v, set) => {
    if (typeof v === 'number' && set.has(v) && !numbersInRequest.has(String(v)))
      found.push(`${key}=${v}`);
  };
  const stack = [json];
  let budget = 200_000;
  while (stack.length > 0 && budget-- > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    if ('stageStatuses' in node) check('pipeline id', node.id, secrets.pipelineIds);
    if ('stageHandlerName' in node) {
      check(
        `stage ${'executionId' in node ? 'stageId' : 'id'}`,
        'executionId' in node ? node.stageId : node.id,
        secrets.stageIds,
      );
      check('stage pipelineId', node.pipelineId, secrets.pipelineIds);
    }
    if ('definitionVersion' in node) check('schedule id', node.id, secrets.scheduleIds);
    if ('scheduledFor' in node && 'trigger' in node) {
      check('run scheduleId', node.scheduleId, secrets.scheduleIds);
      check('run pipelineId', node.pipelineId, secrets.pipelineIds);
    }
    if ('lastPipelineId' in node) check('lastPipelineId', node.lastPipelineId, secrets.pipelineIds);
    if (
      node.applicationId === secrets.applicationId &&
      !numbersInRequest.has(String(node.applicationId))
    )
      found.push(`applicationId=${node.applicationId}`);
    for (const v of Object.values(node)) if (v !== null && typeof v === 'object') stack.push(v);
  }
  return found;
}

/**
 * Findings for one case and its response: [{ oracle, detail }]. `fx` is the fixtures
 * (marker, secret, secretsOfA).
 */
export function judge(c, res, fx) {
  const findings = [];
  if (res.timeout) return [{ oracle: 'hang', detail: `no answer within ${c.timeoutMs} ms` }];
  if (res.status === undefined) {
    if (!c.mayClose) findings.push({ oracle: 'no-response', detail: res.error });
    return findings;
  }
  const status = res.status;
  const body = res.body ?? Buffer.alloc(0);
  const type = String(res.headers?.['content-type'] ?? '');
  if (status >= 500)
    findings.push(
      overload(status, body, res.headers)
        ? { oracle: 'overload-503', detail: `${status} ${problemCode(body)}` }
        : { oracle: '5xx', detail: `${status}` },
    );
  if (status >= 400) {
    let problem = null;
    try {
      problem = JSON.parse(body.toString('utf8'));
    } catch {
      // not JSON
    }
    const bodyOk =
      c.head ||
      (problem !== null &&
        typeof problem === 'object' &&
        problem.status === status &&
        typeof problem.code === 'string');
    if (!type.startsWith('application/problem+json') || !bodyOk) {
      const cut =
        res.bodyBytes > body.length
          ? ` (a body of ${res.bodyBytes} bytes: only the first ${body.length} were kept)`
          : '';
      findings.push({
        oracle: 'not-problem-json',
        detail: `${status} with content-type "${type || '(none)'}"${bodyOk ? '' : ` and a body that is not a problem document${cut}`}`,
      });
    }
  }
  if (status >= 200 && status < 300) {
    if (c.checks.expectDenied)
      findings.push({
        oracle: 'cross-tenant-access',
        detail: `${status} for application B on application A's resource`,
      });
    if (c.checks.unauthenticated)
      findings.push({
        oracle: 'unauthenticated-access',
        detail: `${status} with ${c.actor === 'anon' ? 'no' : 'invalid'} credentials`,
      });
  }
  if (body.length === 0) return findings;
  const text = body.toString('utf8');
  const sent = requestText(c);
  // A's own deliveries carry the real context values (addendum §5.1): a pull's answer, or a
  // result's answer with the next delivery (decision 0100). The one place the secret may go.
  const ownPull = c.actor === 'A' && (c.op === 'POST /jobs/pull' || c.op === 'POST /stages/{stageId}/result');
  if (!ownPull && text.includes(fx.secret))
    findings.push({ oracle: 'secret-leak', detail: "A's sensitive context value in the response" });
  if (text.includes(fx.apps.A.apiKey))
    findings.push({ oracle: 'secret-leak', detail: "A's API key in the response" });
  if (c.checks.leak) {
    const markers = new Set();
    for (const m of text.matchAll(new RegExp(`${fx.marker}[A-Za-z0-9_.-]*`, 'g')))
      if (!sent.includes(m[0]) && !fx.writableByB.has(m[0])) markers.add(m[0]);
    const opaque = fx.secretsOfA.strings
      .filter((s) => s && text.includes(s) && !sent.includes(s) && !fx.writableByB.has(s))
      .map((s) => `${s.slice(0, 12)}…`);
    let ids = [];
    if (type.includes('json')) {
      try {
        const numbers = new Set(sent.match(/\d+/g) ?? []);
        ids = idLeaks(JSON.parse(text), fx.secretsOfA, numbers);
      } catch {
        // not JSON: the string searches above still ran
      }
    }
    if (markers.size || opaque.length || ids.length) {
      findings.push({
        oracle: 'cross-tenant-read',
        detail: `A's data in a response to ${c.actor}: ${[...[...markers].slice(0, 5), ...opaque.slice(0, 3), ...ids.slice(0, 5)].join(', ')}`,
      });
    }
  }
  return findings;
}
