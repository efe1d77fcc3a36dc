// npm run bench: every benchmark of the product, one JSON line each. BENCH_ONLY=engine|schedules
// runs one of them; BENCH_TRACING=1 runs the engine bench with tracing off and on (engine.mjs).
import { benchEngine, benchEngineTracing } from './engine.mjs';
import { benchSchedules } from './schedules.mjs';

const only = process.env.BENCH_ONLY;
if (!only || only === 'engine') await (process.env.BENCH_TRACING === '1' ? benchEngineTracing() : benchEngine());
if (!only || only === 'schedules') await benchSchedules();
