// Summarises the .cpuprofile files `BENCH_CPU_PROF=dir npm run bench` writes: for each process, the
// share of its sampled CPU by where the code lives (our packages, each node_modules package, Node's
// internals, garbage collection, the idle loop) and its top functions by self time. Used for the
// profile section of docs/performance.md.
//
//   node e2e/bench/profile-summary.mjs DIR [TOP]     (TOP functions per process, default 12)
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, topArg] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node e2e/bench/profile-summary.mjs DIR [TOP]');
  process.exit(2);
}
const TOP = Number(topArg ?? 12);

/** Where a frame's code lives: @po/<lib or service>, an npm package, node:internal, or a VM bucket. */
function area(frame) {
  const { url, functionName } = frame.callFrame;
  if (!url) {
    if (functionName === '(garbage collector)') return 'gc';
    if (functionName === '(idle)' || functionName === '(program)') return functionName.slice(1, -1);
    return 'native';
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  const own = /\/(libs|services)\/([^/]+)\//.exec(url);
  if (own) return `@po/${own[2]}`;
  if (url.startsWith('node:')) return 'node';
  return 'other';
}

for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const deltas = profile.timeDeltas;
  const selfUs = new Map();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i] ?? 0)));

  const areas = new Map();
  const functions = new Map();
  let busy = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    const where = area(node);
    areas.set(where, (areas.get(where) ?? 0) + us);
    if (where === 'idle') continue;
    busy += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*\/(node_modules|libs|services)\//, '$1/')}:${lineNumber + 1}` : ''}`;
    functions.set(key, (functions.get(key) ?? 0) + us);
  }
  const pct = (us) => ((100 * us) / busy).toFixed(1).padStart(5);
  console.log(`\n## ${file}: ${(busy / 1e6).toFixed(2)} s busy`);
  for (const [where, us] of [...areas].filter(([w]) => w !== 'idle').sort((a, b) => b[1] - a[1]).slice(0, 10)) {
    console.log(`  ${pct(us)}%  ${where}`);
  }
  console.log('  top functions (self):');
  for (const [name, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${pct(us)}%  ${name}`);
}
