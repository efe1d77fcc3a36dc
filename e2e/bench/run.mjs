// npm run bench: every benchmark of the product, JSON lines on stdout (progress on stderr).
// BENCH_ONLY=engine|schedules|search|dashboard|republish runs one of them (search: GET /pipelines
// over 1,000,000 pipelines, e2e/bench/search.mjs; dashboard: /ui/pipelines in Chromium over 100,000,
// e2e/bench/dashboard.mjs; republish: 100,000 Pending stages whose messages a FLUSHALL took,
// e2e/bench/republish.mjs); BENCH_PHASES=saturation,latency,create chooses the engine's phases;
// BENCH_TRACING=1 runs the engine bench with tracing off and on. Every variable is listed at the
// top of engine.mjs (and schedules.mjs).
import { benchEngine, benchEngineTracing } from './engine.mjs';
import { benchRepublish } from './republish.mjs';
import { benchSchedules } from './schedules.mjs';

const only = process.env.BENCH_ONLY;
if (only && !['engine', 'schedules', 'search', 'dashboard', 'republish'].includes(only))
  throw new Error(
    `BENCH_ONLY must be engine, schedules, search, dashboard or republish, got ${only}`,
  );
if (!only || only === 'engine')
  await (process.env.BENCH_TRACING === '1' ? benchEngineTracing() : benchEngine());
if (!only || only === 'schedules') await benchSchedules();
// search.mjs measures when it is loaded.
if (!only || only === 'search') await import('./search.mjs');
// dashboard.mjs too: /ui/pipelines in Chromium over 100,000 pipelines.
if (!only || only === 'dashboard') await import('./dashboard.mjs');
if (!only || only === 'republish') await benchRepublish();
