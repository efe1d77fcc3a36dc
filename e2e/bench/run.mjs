// npm run bench: every benchmark of the product, one JSON line each. BENCH_ONLY=engine|schedules
// runs one of them.
import { benchEngine } from './engine.mjs';
import { benchSchedules } from './schedules.mjs';

const only = process.env.BENCH_ONLY;
if (!only || only === 'engine') await benchEngine();
if (!only || only === 'schedules') await benchSchedules();
