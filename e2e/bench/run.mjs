// npm run bench: every benchmark of the product, JSON lines on stdout (progress on stderr).
// BENCH_ONLY=engine|sdks|fairness|schedules|search|dashboard|republish runs one of them (search:
// GET /pipelines over 1,000,000 pipelines, e2e/bench/search.mjs; dashboard: /ui/pipelines in
// Chromium over 100,000, e2e/bench/dashboard.mjs; republish: 100,000 Pending stages whose messages
// a FLUSHALL took, e2e/bench/republish.mjs; sdks: the saturation phase run by each SDK's echo
// example, TypeScript, Python and Go, e2e/bench/sdks.mjs; fairness: flow control's fair share and
// its CPU cost, one flooding key against ten small ones under a shared capacity of 16,
// e2e/bench/fairness.mjs; bulk-rerun: 10,000 failed pipelines rerun from their failure at 500 a
// second beside other traffic, e2e/bench/bulk-rerun.mjs); BENCH_PHASES=saturation,latency,create chooses the engine's phases;
// BENCH_TRACING=1 runs the engine bench with tracing off and on. Every variable is listed at the
// top of engine.mjs (and schedules.mjs, fairness.mjs).
import { benchEngine, benchEngineTracing } from './engine.mjs';
import { benchBulkRerun } from './bulk-rerun.mjs';
import { benchFairness } from './fairness.mjs';
import { benchRepublish } from './republish.mjs';
import { benchSchedules } from './schedules.mjs';
import { benchSdks } from './sdks.mjs';

const only = process.env.BENCH_ONLY;
if (
  only &&
  !['engine', 'sdks', 'fairness', 'bulk-rerun', 'schedules', 'search', 'dashboard', 'republish'].includes(only)
)
  throw new Error(
    `BENCH_ONLY must be engine, sdks, fairness, bulk-rerun, schedules, search, dashboard or republish, got ${only}`,
  );
if (!only || only === 'engine')
  await (process.env.BENCH_TRACING === '1' ? benchEngineTracing() : benchEngine());
if (!only || only === 'sdks') await benchSdks();
if (!only || only === 'fairness') await benchFairness();
if (!only || only === 'bulk-rerun') await benchBulkRerun();
if (!only || only === 'schedules') await benchSchedules();
// search.mjs measures when it is loaded.
if (!only || only === 'search') await import('./search.mjs');
// dashboard.mjs too: /ui/pipelines in Chromium over 100,000 pipelines.
if (!only || only === 'dashboard') await import('./dashboard.mjs');
if (!only || only === 'republish') await benchRepublish();
