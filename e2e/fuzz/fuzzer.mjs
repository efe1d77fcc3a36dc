// The fuzz run: cases from the seed, sent `concurrency` at a time, each judged by the oracles;
// then every service's /healthz and A's sentinels. Returns a report: counts per status, endpoint
// and family, and the findings grouped (oracle, status, endpoint, variant) with reproductions.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createClient } from './client.mjs';
import { createWorld, makeCase, traceIdOf } from './cases.mjs';
import { loadOperations } from './openapi.mjs';
import { CROSS_TENANT, ORACLES, judge } from './oracles.mjs';

export { setupFixtures, adminRunner } from './fixtures.mjs';

export const DEFAULT_SEED = 20_251_010;
export const DEFAULT_LIMITS = {
  maxBodyBytes: 33_554_432,
  resultBodyBytes: 327_680,
  timeoutMs: 10_000,
};
const EXAMPLES_PER_GROUP = 4;

/** The run's seed: FUZZ_SEED (decimal or 0x…), else the fixed default. */
export function seedFrom(value) {
  if (value === undefined || value === '') return DEFAULT_SEED;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new Error(`FUZZ_SEED must be an integer, got ${value}`);
  return n >>> 0;
}

const printable = (buf, max) => {
  // Control characters (but tab and newlines) shown as \xNN.
  const s = [...buf.subarray(0, max).toString('utf8')]
    .map((ch) =>
      /\p{Cc}/u.test(ch) && !'\t\n\r'.includes(ch)
        ? `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`
        : ch,
    )
    .join('');
  return buf.length > max ? `${s}… (${buf.length} bytes)` : s;
};

function reproduction(c, urls) {
  const base = urls[c.gateway];
  const small = (buf) => buf && buf.length <= 4096;
  if (c.raw) {
    if (!small(c.raw)) return `(raw request of ${c.raw.length} bytes: rebuild it with the seed)`;
    const { hostname, port } = new URL(base);
    return `printf '%s' '${c.raw.toString('base64')}' | base64 -d | nc -q 5 ${hostname} ${port}`;
  }
  const headers = Object.entries(c.headers).map(
    ([k, v]) => `-H '${k}: ${String(v).slice(0, 200).replace(/'/g, "'\\''")}'`,
  );
  const body =
    c.body === undefined
      ? ''
      : small(c.body)
        ? ` --data-binary @<(printf '%s' '${c.body.toString('base64')}' | base64 -d)`
        : ` (body of ${c.body.length} bytes: rebuild it with the seed)`;
  return `curl -sS -i -X ${c.method} '${base}${c.path.length > 2000 ? `${c.path.slice(0, 2000)}…` : c.path}' ${headers.join(' ')}${c.chunked ? " -H 'transfer-encoding: chunked'" : ''}${body}`;
}

/** A variant without its particulars (sizes, values): what the per-variant counts are keyed by. */
const variantKey = (variant) => variant.split('=')[0].replace(/\d+/g, 'N').slice(0, 80);

/** Wire-level requests and cut connections do not depend on the operation: one group for all. */
const groupOp = (oracle, c) => (c.family === 'wire' || oracle === 'no-response' ? '*' : c.op);

function groupKey(oracle, c, status) {
  const variant = variantKey(c.variant);
  return `${oracle} | ${status ?? '-'} | ${groupOp(oracle, c)} | ${c.family}/${variant}`;
}

/**
 * Runs `requests` cases (indexes from..from+requests-1) against `urls` ({ api, worker }).
 * services: [{ name, url }] for the liveness check; fixtures from setupFixtures();
 * logLines(): the services' log lines so far (to attach a 5xx's logged cause), optional.
 */
export async function runFuzz({
  urls,
  services,
  fixtures,
  seed = DEFAULT_SEED,
  requests = 2000,
  from = 0,
  concurrency = 8,
  limits = {},
  long = false,
  logLines,
  progress,
}) {
  const { ops, resolve } = loadOperations();
  const world = createWorld({
    ops,
    resolve,
    fixtures,
    limits: { ...DEFAULT_LIMITS, ...limits },
    long,
  });
  const client = createClient({ concurrency });
  const report = {
    seed,
    from,
    requests,
    concurrency,
    long,
    startedAt: new Date().toISOString(),
    durationMs: 0,
    operations: ops.map((op) => `${op.key} (${op.service})`),
    totals: {
      requests: 0,
      fiveXX: 0,
      overload503: 0,
      hangs: 0,
      noResponse: 0,
      crossTenant: 0,
      notProblemJson: 0,
      deadServices: 0,
      findings: 0,
    },
    byStatus: {},
    byEndpoint: {},
    byFamily: {},
    byVariant: {},
    groups: [],
    sentinels: [],
    liveness: [],
  };
  const groups = new Map();
  const inFlight = new Map();
  const answered5xx = new Set();
  const bump = (table, key, status) => {
    const row = (table[key] ??= { total: 0, statuses: {} });
    row.total++;
    row.statuses[status] = (row.statuses[status] ?? 0) + 1;
  };
  const record = (oracle, c, res, detail, concurrent) => {
    report.totals.findings++;
    if (oracle === '5xx') report.totals.fiveXX++;
    if (oracle === 'overload-503') report.totals.overload503++;
    if (oracle === 'hang') report.totals.hangs++;
    if (oracle === 'no-response') report.totals.noResponse++;
    if (oracle === 'not-problem-json') report.totals.notProblemJson++;
    if (CROSS_TENANT.has(oracle)) report.totals.crossTenant++;
    const key = groupKey(oracle, c, res.status);
    let g = groups.get(key);
    if (!g)
      groups.set(
        key,
        (g = {
          key,
          oracle,
          status: res.status ?? null,
          op: groupOp(oracle, c),
          family: c.family,
          count: 0,
          variants: new Set(),
          gateways: new Set(),
          actors: new Set(),
          ops: new Set(),
          examples: [],
        }),
      );
    g.count++;
    g.ops.add(c.op);
    if (g.variants.size < 12) g.variants.add(c.variant);
    g.gateways.add(c.gateway);
    g.actors.add(c.actor);
    if (g.examples.length < EXAMPLES_PER_GROUP) {
      g.examples.push({
        index: c.index,
        detail,
        actor: c.actor,
        gateway: c.gateway,
        method: c.method,
        path: c.path.length > 300 ? `${c.path.slice(0, 300)}…` : c.path,
        variant: c.variant,
        traceId: c.traceId,
        ms: res.ms,
        request: c.raw ? printable(c.raw, 600) : c.body ? printable(c.body, 600) : null,
        status: res.status ?? null,
        error: res.error ?? (res.timeout ? 'timeout' : undefined),
        responseType: res.headers?.['content-type'] ?? null,
        response: res.body ? printable(res.body, 800) : null,
        concurrent: oracle === 'hang' ? concurrent : undefined,
        clientLagMs: res.clientLagMs,
        reproduce: `FUZZ_SEED=${seed} npm run fuzz -- --from ${c.index} --requests 1`,
        curl: reproduction(c, urls),
      });
    }
  };

  // How late this process's own event loop ran: a hang with a big client lag may be ours.
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  const started = performance.now();
  let next = from;
  const end = from + requests;
  let lastProgress = performance.now();
  const worker = async () => {
    while (next < end) {
      const index = next++;
      const c = makeCase(world, seed, index);
      const concurrent = [...inFlight.values()];
      inFlight.set(
        index,
        `case ${index}: ${c.op} ${c.family}/${c.variant.slice(0, 60)} (${(c.raw ?? c.body)?.length ?? 0} bytes)`,
      );
      const res = await client.send(urls[c.gateway], c, c.timeoutMs);
      inFlight.delete(index);
      const status = res.timeout ? 'timeout' : (res.status ?? 'no-response');
      if (res.status >= 500) answered5xx.add(index);
      report.totals.requests++;
      report.byStatus[status] = (report.byStatus[status] ?? 0) + 1;
      bump(report.byEndpoint, `${c.op} → ${c.gateway}`, status);
      bump(report.byFamily, c.family, status);
      bump(report.byVariant, `${c.family}/${variantKey(c.variant)}`, status);
      for (const f of judge(c, res, fixtures)) record(f.oracle, c, res, f.detail, concurrent);
      if (progress && performance.now() - lastProgress > 5000) {
        lastProgress = performance.now();
        progress(report);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  client.close();
  loopDelay.disable();
  report.durationMs = Math.round(performance.now() - started);
  report.client = {
    eventLoopDelayP99Ms: Math.round(loopDelay.percentile(99) / 1e6),
    eventLoopDelayMaxMs: Math.round(loopDelay.max / 1e6),
  };

  for (const s of services) {
    try {
      const res = await fetch(`${s.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
      report.liveness.push({ service: s.name, status: res.status });
      if (res.status !== 200) report.totals.deadServices++;
    } catch (err) {
      report.liveness.push({
        service: s.name,
        status: null,
        error: String(err.cause?.code ?? err.message),
      });
      report.totals.deadServices++;
    }
  }
  report.sentinels = await fixtures.verifySentinels();
  for (const change of report.sentinels) {
    report.totals.crossTenant++;
    report.totals.findings++;
    groups.set(`sentinel-changed | ${change.what}`, {
      key: `sentinel-changed | ${change.what}`,
      oracle: 'sentinel-changed',
      status: null,
      op: '(after the run)',
      family: 'crossTenant',
      count: 1,
      variants: new Set(),
      gateways: new Set(),
      actors: new Set(['B']),
      ops: new Set(),
      examples: [change],
    });
  }

  const lines = logLines ? logLines() : [];
  loggedErrors(lines, { seed, world, answered5xx, groups, report });
  const order = (oracle) =>
    oracle === 'sentinel-changed' ? 3.5 : oracle === 'logged-error' ? 99 : ORACLES.indexOf(oracle);
  report.groups = [...groups.values()]
    .sort((a, b) => order(a.oracle) - order(b.oracle) || b.count - a.count)
    .map((g) => ({
      ...g,
      variants: [...g.variants],
      ops: [...g.ops],
      gateways: [...g.gateways],
      actors: [...g.actors],
      examples: g.examples.map((e) =>
        e.traceId && (g.oracle === '5xx' || g.oracle === 'hang')
          ? {
              ...e,
              serverLog: lines
                .filter((l) => l.includes(e.traceId))
                .sort((x, y) => Number(isError(y)) - Number(isError(x)))
                .slice(0, 3)
                .map((l) => l.slice(0, 1500)),
            }
          : e,
      ),
    }));
  return report;
}

/**
 * Unexpected errors the services logged for a case whose client saw no 5xx (it had gone, or the
 * error was swallowed): reported as 'logged-error' groups, for information (no test fails on them).
 */
const isError = (line) =>
  line.includes('"level":"error"') ||
  line.includes('"level":50') ||
  line.includes('"level":"fatal"');

function loggedErrors(lines, { seed, world, answered5xx, groups, report }) {
  const prefix = traceIdOf(seed, 0).slice(0, 10);
  for (const line of lines) {
    if (!isError(line)) continue;
    const trace = /"traceId":"(f2[0-9a-f]{30})"/.exec(line)?.[1];
    if (!trace?.startsWith(prefix)) continue;
    const index = parseInt(trace.slice(10), 16);
    if (answered5xx.has(index)) continue;
    let entry;
    try {
      entry = JSON.parse(line.slice(line.indexOf('{')));
    } catch {
      continue;
    }
    const c = makeCase(world, seed, index);
    const message = String(entry.err?.message ?? entry.msg).slice(0, 120);
    const op = c.family === 'wire' ? '*' : c.op;
    const key = `logged-error | - | ${op} | ${c.family}/${c.variant.split(/[:@=]/)[0]} | ${message}`;
    let g = groups.get(key);
    if (!g)
      groups.set(
        key,
        (g = {
          key,
          oracle: 'logged-error',
          status: null,
          op,
          family: c.family,
          count: 0,
          variants: new Set(),
          gateways: new Set([c.gateway]),
          actors: new Set([c.actor]),
          ops: new Set(),
          examples: [],
        }),
      );
    g.count++;
    g.ops.add(c.op);
    report.totals.loggedErrors = (report.totals.loggedErrors ?? 0) + 1;
    if (g.variants.size < 12) g.variants.add(c.variant);
    if (g.examples.length < EXAMPLES_PER_GROUP)
      g.examples.push({
        index,
        detail: `logged by ${entry.service}: ${message}`,
        actor: c.actor,
        gateway: c.gateway,
        method: c.method,
        path: c.path.slice(0, 300),
        variant: c.variant,
        traceId: trace,
        serverLog: [line.slice(0, 1500)],
        reproduce: `FUZZ_SEED=${seed} npm run fuzz -- --from ${index} --requests 1`,
      });
  }
}

/** A human summary of a report: totals, statuses, and each finding group with one reproduction. */
export function formatSummary(report) {
  const t = report.totals;
  const out = [
    `fuzz: seed ${report.seed} (FUZZ_SEED), cases ${report.from}..${report.from + report.requests - 1}, ${t.requests} requests in ${(report.durationMs / 1000).toFixed(1)} s (${Math.round((t.requests / report.durationMs) * 1000)}/s, concurrency ${report.concurrency})`,
    `fuzz: 5xx ${t.fiveXX} (and 503 overload answers ${t.overload503}), hangs ${t.hangs}, no response ${t.noResponse}, cross-tenant ${t.crossTenant}, errors not problem+json ${t.notProblemJson}, dead services ${t.deadServices}; unexpected errors only in the services' logs ${t.loggedErrors ?? 0}`,
    `fuzz: statuses ${Object.entries(report.byStatus)
      .sort()
      .map(([s, n]) => `${s}×${n}`)
      .join(' ')}`,
    `fuzz: families ${Object.entries(report.byFamily)
      .map(([f, r]) => `${f} ${r.total}`)
      .join(', ')}`,
    `fuzz: the fuzzer's own event loop ran late by up to ${report.client?.eventLoopDelayMaxMs} ms (p99 ${report.client?.eventLoopDelayP99Ms} ms)`,
    `fuzz: liveness ${report.liveness.map((l) => `${l.service} ${l.status ?? l.error}`).join(', ')}`,
  ];
  for (const g of report.groups) {
    const e = g.examples[0];
    out.push(`\n[${g.oracle}] ×${g.count}  ${g.key}`);
    if (g.variants.length) out.push(`  variants: ${g.variants.slice(0, 6).join(' | ')}`);
    if (g.op === '*' && g.ops?.length)
      out.push(
        `  operations: ${g.ops.length} (${g.ops.slice(0, 4).join(', ')}${g.ops.length > 4 ? ', …' : ''})`,
      );
    if (e?.index !== undefined) {
      out.push(
        `  e.g. case ${e.index} (${e.actor} → ${e.gateway}): ${e.method} ${e.path.slice(0, 160)}`,
      );
      if (e.request) out.push(`  request: ${e.request.slice(0, 300)}`);
      out.push(
        `  response: ${e.status ?? e.error} ${e.responseType ?? ''} ${(e.response ?? '').slice(0, 300)}`,
      );
      if (e.serverLog?.length) out.push(`  server log: ${e.serverLog[0].slice(0, 400)}`);
      out.push(`  reproduce: ${e.reproduce}`);
    } else if (e) out.push(`  ${JSON.stringify(e).slice(0, 600)}`);
  }
  return out.join('\n');
}
