// How fast the box is right now, so that a figure can be told from the machine's drift: the same
// 2-core VM has run the same build at 1.9 and at 3.4 ms of CPU per stage on different days
// (docs/performance.md). A fixed piece of work of the kind the services do most (JSON, hashing,
// small objects), timed in a fresh process on the bench's own Node (so neither the bench's heap nor
// its compiled code colours it), the best of ten rounds; lower is faster. Compare figures between
// runs whose calibration is alike, or measure changes in alternating pairs.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

function measure() {
  const doc = {
    id: 0,
    name: 'stage-name',
    status: 'Running',
    items: Array.from({ length: 8 }, (_, i) => ({ key: `k${i}`, value: i * 3.5 })),
  };
  let best = Infinity;
  let sink = 0;
  for (let round = 0; round < 10; round++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 20_000; i++) {
      const text = JSON.stringify({ ...doc, id: i });
      sink += JSON.parse(text).items.length + createHash('sha256').update(text).digest()[0];
    }
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
  }
  if (sink < 0) throw new Error('unreachable'); // keeps the work from being optimised away
  return +best.toFixed(1);
}

const self = fileURLToPath(import.meta.url);

export function boxCalibrationMs() {
  return Number(execFileSync(process.execPath, [self], { encoding: 'utf8' }).trim());
}

if (process.argv[1] === self) console.log(measure());
