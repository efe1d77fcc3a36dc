// npm run fuzz [-- --requests N] [--seed S] [--from I] [--concurrency C] [--out FILE] [--sample]
// The long fuzz run (README "Fuzzing"): the five services over a fresh database, two
// applications with planted markers, then N cases from docs/openapi.json (default 10000; issue 10
// asks for 100000). Progress on stderr, the summary on stdout, the whole report in
// .local/fuzz-report.json. Exit code 1 when any oracle found something. `--sample` uses the
// sizes of the 2,000-request e2e sample instead of the long run's bigger bodies.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../../deploy/local/stack.mjs';
import { adminRunner, formatSummary, runFuzz, seedFrom, setupFixtures } from './fuzzer.mjs';
import { startFuzzStack } from './stack.mjs';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    seed: { type: 'string' },
    from: { type: 'string', default: '0' },
    concurrency: { type: 'string', default: '8' },
    out: { type: 'string', default: join(ROOT, '.local', 'fuzz-report.json') },
    sample: { type: 'boolean', default: false },
  },
});
const seed = seedFrom(values.seed ?? process.env.FUZZ_SEED);
const requests = Number(values.requests);
const from = Number(values.from);
const concurrency = Number(values.concurrency);
if (
  !Number.isInteger(requests) ||
  requests < 1 ||
  !Number.isInteger(from) ||
  from < 0 ||
  !Number.isInteger(concurrency) ||
  concurrency < 1
) {
  throw new Error(
    '--requests and --concurrency must be positive integers, --from a non-negative one',
  );
}

const t0 = Date.now();
console.error(
  `fuzz: seed ${seed} (FUZZ_SEED or --seed to change), cases ${from}..${from + requests - 1}, concurrency ${concurrency}; starting the services…`,
);
const stack = await startFuzzStack();
let fixtures;
const stopAll = async () => {
  fixtures?.stop();
  await stack.stop();
};
process.once('SIGINT', () => {
  console.error('fuzz: interrupted; stopping the services');
  void stopAll().finally(() => process.exit(130));
});
void stack.exited.then((e) =>
  console.error(
    `fuzz: ${e.name} exited (${e.signal ?? `code ${e.code}`}) during the run; see ${stack.logFile}`,
  ),
);
let report;
try {
  const urls = { api: stack.urls['api-gateway'], worker: stack.urls['worker-gateway'] };
  fixtures = await setupFixtures({
    apiUrl: urls.api,
    workerUrl: urls.worker,
    admin: adminRunner(stack.env),
    seed,
  });
  console.error(
    `fuzz: services and fixtures ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (marker ${fixtures.marker}); fuzzing…`,
  );
  report = await runFuzz({
    urls,
    services: Object.entries(stack.urls).map(([name, url]) => ({ name, url })),
    fixtures,
    seed,
    requests,
    from,
    concurrency,
    long: !values.sample,
    logLines: stack.errorLines,
    progress: (r) =>
      console.error(
        `fuzz: ${r.totals.requests}/${requests} sent, ${r.totals.findings} findings (5xx ${r.totals.fiveXX}, hangs ${r.totals.hangs}, cross-tenant ${r.totals.crossTenant})`,
      ),
  });
} finally {
  await stopAll();
}
mkdirSync(dirname(values.out), { recursive: true });
writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
console.log(formatSummary(report));
console.error(
  `fuzz: report in ${values.out}; service logs in ${stack.logFile}; ${((Date.now() - t0) / 1000).toFixed(1)} s in all`,
);
const t = report.totals;
process.exitCode =
  t.fiveXX + t.hangs + t.noResponse + t.crossTenant + t.deadServices + t.notProblemJson > 0 ? 1 : 0;
