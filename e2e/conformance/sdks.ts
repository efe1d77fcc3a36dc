import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../deploy/local/stack.mjs';

const run = promisify(execFile);

/** An SDK under test: how to start its conformance worker (README.md in this folder). */
export interface Sdk {
  name: 'typescript' | 'python' | 'go';
  /** Builds what needs building; resolves to the command line that starts the worker. */
  prepare(): Promise<string[]>;
}

const SDKS: Record<Sdk['name'], Sdk> = {
  typescript: { name: 'typescript', prepare: async () => [process.execPath, 'examples/dist/conformance-worker.js'] },
  python: { name: 'python', prepare: async () => ['python3', 'libs/worker-sdk-python/conformance/worker.py'] },
  go: {
    name: 'go',
    prepare: async () => {
      const bin = join(mkdtempSync(join(tmpdir(), 'po-conformance-go-')), 'worker');
      // No module proxy is reachable, and the SDK needs none: a download attempt is a bug.
      await run('go', ['build', '-o', bin, './conformance/worker'], {
        cwd: join(ROOT, 'libs/worker-sdk-go'),
        env: { ...process.env, GOPROXY: 'off', GOFLAGS: '' },
      });
      return [bin];
    },
  },
};

/** `CONFORMANCE_SDKS=python,go` narrows the run; every SDK runs by default. */
export function selectedSdks(): Sdk[] {
  const list = process.env.CONFORMANCE_SDKS?.split(',').map((s) => s.trim()).filter(Boolean) ?? Object.keys(SDKS);
  return list.map((name) => {
    if (!(name in SDKS)) throw new Error(`CONFORMANCE_SDKS: no SDK ${name} (known: ${Object.keys(SDKS).join(', ')})`);
    return SDKS[name as Sdk['name']];
  });
}

/** A line of the worker's PO_CONFORMANCE_LOG. */
export interface Reported {
  event: 'ready' | 'ran' | 'cancelled' | 'stopped';
  handler?: string;
  stageId?: number;
  executionId?: string;
  attempt?: number;
  code?: string;
  reason?: string;
}

/** Reads the lines the worker has written so far (the file grows while it runs). */
export function readReports(file: string): Reported[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Reported);
}
