// Helpers of the real-cluster test (test.mjs): running helm and kubectl against the local control
// plane, printing steps and checks, polling.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const CACHE = process.env.PO_K8S_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'po-k8s');
const BIN = join(CACHE, 'bin');

export class CheckFailed extends Error {}

/** helm and kubectl from the cache, pointed at the local cluster; helm keeps its state in the work folder. */
export function clients(workDir) {
  const helmHome = join(workDir, 'helm');
  mkdirSync(helmHome, { recursive: true });
  const env = {
    ...process.env,
    KUBECONFIG: join(workDir, 'kubeconfig'),
    HELM_CONFIG_HOME: join(helmHome, 'config'),
    HELM_DATA_HOME: join(helmHome, 'data'),
    HELM_CACHE_HOME: join(helmHome, 'cache'),
    NO_COLOR: '1',
  };
  const exec =
    (bin) =>
    (args, { input, allowFail = false } = {}) => {
      const res = spawnSync(join(BIN, bin), args, {
        env,
        input,
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      });
      if (res.error) throw res.error;
      if (res.status !== 0 && !allowFail) {
        throw new CheckFailed(
          `${bin} ${args.join(' ')} exited ${res.status}:\n${(res.stderr || res.stdout).trim()}`,
        );
      }
      return res;
    };
  return { helm: exec('helm'), kubectl: exec('kubectl') };
}

let checks = 0;
let stepStarted = 0;
let stepName = '';

export function step(name) {
  endStep();
  stepName = name;
  stepStarted = Date.now();
  console.log(`\n==> k8s: ${name}`);
}

export function endStep() {
  if (stepName) console.log(`    (${((Date.now() - stepStarted) / 1000).toFixed(1)} s)`);
  stepName = '';
}

/** One assertion: printed when it holds, fatal when it does not. */
export function check(ok, message) {
  if (!ok) throw new CheckFailed(message);
  checks += 1;
  console.log(`    ok  ${message}`);
}

export const info = (message) => console.log(`        ${message}`);
export const checkCount = () => checks;
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns a truthy value or `timeoutMs` passes; returns the last value. */
export async function waitFor(probe, timeoutMs = 30_000, everyMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!value && Date.now() < deadline) {
    await sleep(everyMs);
    value = await probe();
  }
  return value;
}

/** Structural equality of JSON values (key order ignored). */
export function sameJson(a, b) {
  const norm = (v) =>
    Array.isArray(v)
      ? v.map(norm)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, norm(v[k])]),
          )
        : v;
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}
