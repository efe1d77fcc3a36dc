import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../support/cluster.js';
import {
  adminRunner,
  formatSummary,
  runFuzz,
  seedFrom,
  setupFixtures,
  type Fixtures,
  type FindingGroup,
  type FuzzReport,
} from './fuzzer.mjs';

/**
 * Issue 10, "What must show": 2,000 requests generated from docs/openapi.json (valid-ish,
 * malformed, oversized, wrongly typed, wrongly encoded, bad path parameters, wire-level, and
 * application B's credentials against application A's pipelines, stages, schedules, sessions and
 * deliveries) to every operation of both gateways. FUZZ_SEED picks the seed (printed), and
 * FUZZ_REQUESTS the count; the whole report goes to .local/fuzz-e2e-report.json.
 */
describe('schema-driven fuzzing of both gateways', () => {
  const seed = seedFrom(process.env.FUZZ_SEED);
  const requests = Number(process.env.FUZZ_REQUESTS ?? 2000);
  let cluster: Cluster | undefined;
  let fixtures: Fixtures | undefined;
  let report: FuzzReport;

  beforeAll(async () => {
    cluster = await startCluster();
    fixtures = await setupFixtures({
      apiUrl: cluster.apiUrl,
      workerUrl: cluster.workerUrl,
      admin: adminRunner(cluster.env),
      seed,
    });
    console.log(`fuzz: seed ${seed} (set FUZZ_SEED to change it), ${requests} requests`);
    report = await runFuzz({
      urls: { api: cluster.apiUrl, worker: cluster.workerUrl },
      services: cluster.services.map((s) => ({ name: s.name, url: s.url })),
      fixtures,
      seed,
      requests,
      concurrency: 8,
      logLines: () => cluster!.allLines(),
    });
    mkdirSync('.local', { recursive: true });
    writeFileSync('.local/fuzz-e2e-report.json', `${JSON.stringify(report, null, 2)}\n`);
    console.log(formatSummary(report));
  }, 600_000);

  afterAll(async () => {
    fixtures?.stop();
    await cluster?.stop();
  });

  const groups = (...oracles: string[]) =>
    report.groups
      .filter((g: FindingGroup) => oracles.includes(g.oracle))
      .map((g) => {
        const e = g.examples[0];
        return e?.index === undefined
          ? `${g.key}: ${JSON.stringify(e).slice(0, 400)}`
          : `${g.key} ×${g.count}: case ${e.index} ${e.method} ${e.path?.slice(0, 120)} → ${e.status ?? e.error} ${e.response?.slice(0, 200) ?? ''}`;
      });

  it('sent every request it generated', () => {
    expect(report.totals.requests).toBe(requests);
  });

  it('gets no 5xx from any request', () => {
    expect(groups('5xx')).toEqual([]);
  });

  it('gets every answer within 10 s and leaves every service alive', () => {
    expect(groups('hang', 'no-response')).toEqual([]);
    expect(report.liveness.filter((l) => l.status !== 200)).toEqual([]);
  });

  it('gives application B, anonymous and bad credentials nothing of application A, and lets them change nothing of it', () => {
    expect(
      groups(
        'cross-tenant-read',
        'secret-leak',
        'cross-tenant-access',
        'unauthenticated-access',
        'sentinel-changed',
      ),
    ).toEqual([]);
  });

  it('answers every error with application/problem+json', () => {
    expect(groups('not-problem-json')).toEqual([]);
  });
});
