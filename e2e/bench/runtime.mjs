// Which Node runs the services and SDK workers a bench starts (BENCH_NODE):
//   image    (default) the runtime of the deployed image, Node 24 (decision 0096), fetched once by
//            deploy/local/ensure-node24.sh: the bench measures what the chart runs (decision 0104)
//   current  the Node running the bench (what `npm run up` uses on this machine)
//   a path   that node binary
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let resolved;

/** { path, version } of the Node for bench processes, resolved on first use. */
export function benchNode() {
  if (resolved) return resolved;
  const choice = process.env.BENCH_NODE ?? 'image';
  let path;
  if (choice === 'current') path = process.execPath;
  else if (choice === 'image') {
    try {
      const bin = execFileSync('bash', [join(ROOT, 'deploy/local/ensure-node24.sh')], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      })
        .toString()
        .trim();
      path = join(bin, 'node');
    } catch (err) {
      throw new Error(
        `BENCH_NODE=image: the image's Node 24 is not available here (${err.message}); BENCH_NODE=current runs the bench's own Node`,
        { cause: err },
      );
    }
  } else path = choice;
  const version = execFileSync(path, ['--version']).toString().trim();
  resolved = { path, version };
  return resolved;
}
