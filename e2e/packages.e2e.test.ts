// The three published packages (@po/worker-sdk, @po/client, @po/cli) as a user gets them: packed
// with `npm pack`, installed from the tarballs into an empty project outside the workspace, and
// used from there against the real services (issue 30 item 6, decision 0130).
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../deploy/local/stack.mjs';
import { startCluster, type Cluster } from './support/cluster.js';
import { exec } from './support/exec.js';
import { ManagedProcess } from './support/processes.js';

const PACKAGES = {
  '@po/worker-sdk': 'worker-sdk',
  '@po/client': 'client',
  '@po/cli': 'cli',
} as const;
type PackageName = keyof typeof PACKAGES;
const NAMES = Object.keys(PACKAGES) as PackageName[];

/**
 * This process's environment without what ties a child to the workspace: vitest runs under
 * `npx`, which exports `npm_config_local_prefix` (the workspace root: an `npm install` anywhere
 * would install there) and the workspace's `npm_package_*`; NODE_PATH would let Node find
 * modules outside the project. The registry and the cache stay, so the install finds what the
 * machine was set up with.
 */
function outsideEnv(): NodeJS.ProcessEnv {
  const keep = new Set(['npm_config_registry', 'npm_config_cache']);
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) =>
        !(key.startsWith('npm_') && !keep.has(key)) &&
        !['INIT_CWD', 'NODE_PATH', 'NODE_OPTIONS'].includes(key),
    ),
  );
}

interface Packed {
  filename: string;
  files: { path: string }[];
}

describe('the npm packages, packed and installed outside the workspace', () => {
  let cluster: Cluster;
  let apiKey: string;
  let tarballs: string;
  let project: string;
  const packed = {} as Record<PackageName, Packed>;
  let pipelineId: number;
  const input = '{"greeting":"héllo from a tarball","n":3}';

  const env = () => ({
    ...outsideEnv(),
    PO_API_URL: cluster.apiUrl,
    PO_WORKER_URL: cluster.workerUrl,
    PO_API_KEY: apiKey,
  });
  const node = (script: string, args: string[] = []) =>
    exec(process.execPath, [script, ...args], project, env());
  const po = (args: string[]) =>
    exec(join(project, 'node_modules', '.bin', 'po'), args, project, env());

  /** `npm pack` in the package's folder; its prepack script builds the package when it is stale. */
  async function pack(name: PackageName): Promise<void> {
    const run = await exec(
      'npm',
      ['pack', '--json', '--pack-destination', tarballs],
      join(ROOT, 'libs', PACKAGES[name]),
      outsideEnv(),
      90_000,
    );
    expect(run, run.stderr).toMatchObject({ code: 0 });
    packed[name] = (JSON.parse(run.stdout) as Packed[])[0]!;
  }

  async function install(): Promise<void> {
    // The cli's prepack builds @po/client too (a project reference): after the client's own, so
    // the two never write the client's dist at once.
    await Promise.all([pack('@po/worker-sdk'), pack('@po/client').then(() => pack('@po/cli'))]);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'po-packages-check', private: true, type: 'module' }),
    );
    const files = NAMES.map((name) => join(tarballs, packed[name].filename));
    const run = await exec(
      'npm',
      ['install', ...files, '--no-audit', '--no-fund', '--prefer-offline'],
      project,
      outsideEnv(),
      90_000,
    );
    expect(run, run.stderr).toMatchObject({ code: 0 });
  }

  beforeAll(async () => {
    // realpath: on some systems the temporary directory is a symbolic link (macOS /var → /private/var).
    const base = mkdtempSync(join(realpathSync(tmpdir()), 'po-packages-'));
    tarballs = join(base, 'tarballs');
    project = join(base, 'project');
    mkdirSync(tarballs);
    mkdirSync(project);
    // No schedules here: the scheduler is left out, one process fewer to wait for. The services
    // start before npm's work, not beside it: on two busy cores they then missed their readiness
    // deadline.
    cluster = await startCluster({ replicas: { 'scheduler-service': 0 } });
    apiKey = (await cluster.createApp('packages')).apiKey;
    await install();
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    if (project) rmSync(join(project, '..'), { recursive: true, force: true });
  });

  it('each tarball holds the built code, its README and the LICENSE; the libraries their types; nothing else', () => {
    const license = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
    for (const name of NAMES) {
      const dir = join(ROOT, 'libs', PACKAGES[name]);
      const paths = packed[name].files.map((f) => f.path).sort();
      const library = name !== '@po/cli';
      const allowed = library ? /^dist\/[\w/-]+\.(js|d\.ts)$/ : /^(bin\/po\.js|dist\/[\w/-]+\.js)$/;
      expect(
        paths.filter(
          (p) => !['package.json', 'README.md', 'LICENSE'].includes(p) && !allowed.test(p),
        ),
        name,
      ).toEqual([]);
      expect(paths, name).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE']));
      if (library)
        expect(paths, name).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts']));
      // A file left in dist by a source since deleted, or a test, would be published with it.
      const orphans = paths
        .filter((p) => p.startsWith('dist/'))
        .filter(
          (p) =>
            !existsSync(
              join(dir, 'src', p.slice('dist/'.length).replace(/\.(js|d\.ts)$/, '.ts')),
            ) || /\.test(-support)?\./.test(p),
        );
      expect(orphans, name).toEqual([]);
      expect(readFileSync(join(dir, 'LICENSE'), 'utf8'), `${name} LICENSE`).toBe(license);
    }
  });

  it('the installed packages depend on no package that is not published, by a real version range', () => {
    const workspace = readdirSync(join(ROOT, 'libs')).flatMap((lib) => {
      const file = join(ROOT, 'libs', lib, 'package.json');
      return existsSync(file)
        ? [(JSON.parse(readFileSync(file, 'utf8')) as { name: string }).name]
        : [];
    });
    for (const name of NAMES) {
      const manifest = JSON.parse(
        readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8'),
      );
      expect(manifest.private, name).toBeUndefined();
      expect(manifest, name).toMatchObject({
        license: 'Apache-2.0',
        engines: { node: expect.any(String) },
        repository: { directory: `libs/${PACKAGES[name]}` },
      });
      const needed = { ...manifest.dependencies, ...manifest.peerDependencies } as Record<
        string,
        string
      >;
      for (const [dependency, range] of Object.entries(needed)) {
        if (!workspace.includes(dependency)) continue;
        expect(NAMES, `${name} → ${dependency}`).toContain(dependency);
        expect(range, `${name} → ${dependency}`).toMatch(/^\^\d+\.\d+\.\d+$/);
      }
    }
  });

  it('in the project, the packages resolve to its own node_modules, never to the workspace', async () => {
    expect(relative(ROOT, project).startsWith('..')).toBe(true);
    writeFileSync(
      join(project, 'resolve.mjs'),
      `for (const name of ['@po/worker-sdk', '@po/client', '@po/cli/package.json']) console.log(import.meta.resolve(name));\n`,
    );
    const run = await node('resolve.mjs');
    expect(run, run.stderr).toMatchObject({ code: 0 });
    const resolved = run.stdout
      .trim()
      .split('\n')
      .map((url) => fileURLToPath(url));
    expect(resolved).toEqual([
      join(project, 'node_modules', '@po', 'worker-sdk', 'dist', 'index.js'),
      join(project, 'node_modules', '@po', 'client', 'dist', 'index.js'),
      join(project, 'node_modules', '@po', 'cli', 'package.json'),
    ]);
  });

  it("TypeScript finds the libraries' types through their exports", async () => {
    writeFileSync(
      join(project, 'check.ts'),
      `import { createWorker, type WorkerOptions } from '@po/worker-sdk';
import { createClient, ProblemError, type PipelineResponse } from '@po/client';

const options: WorkerOptions = { baseUrl: 'http://127.0.0.1:1', apiKey: 'k', instanceId: 'typed', handlers: { echo: (ctx) => ctx.input } };
// @ts-expect-error concurrency is a number: the options are typed, not any
createWorker({ ...options, concurrency: 'four' });
const po = createClient({ baseUrl: 'http://127.0.0.1:1' });
export async function status(id: number): Promise<PipelineResponse['status'] | string> {
  try {
    return (await po.pipelines.get(id)).status;
  } catch (err) {
    if (err instanceof ProblemError) return err.code;
    throw err;
  }
}
`,
    );
    // No @types/node in the project: skipLibCheck leaves the packages' own references to Node's types alone.
    const compilerOptions = {
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      target: 'ES2022',
      lib: ['ES2023'],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: [],
    };
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions, files: ['check.ts'] }),
    );
    const run = await node(join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), [
      '-p',
      'tsconfig.json',
    ]);
    expect(run.stdout + run.stderr).toBe('');
    expect(run.code).toBe(0);
  });

  it('a worker on the installed SDK runs a pipeline created through the installed client: output = input', async () => {
    writeFileSync(
      join(project, 'worker.mjs'),
      `import { createWorker } from '@po/worker-sdk';

const worker = createWorker({
  baseUrl: process.env.PO_API_URL,
  workerBaseUrl: process.env.PO_WORKER_URL,
  apiKey: process.env.PO_API_KEY,
  instanceId: 'packaged-worker',
  waitSeconds: 2,
  handlers: { 'packaged-echo': (ctx) => ctx.input },
});
worker.stopOnSignals();
await worker.start();
`,
    );
    writeFileSync(
      join(project, 'run-pipeline.mjs'),
      `import { createClient } from '@po/client';

const po = createClient({ baseUrl: process.env.PO_API_URL, apiKey: process.env.PO_API_KEY });
const { pipeline } = await po.pipelines.createIdempotent({
  idempotencyKey: 'packaged-' + Date.now(),
  name: 'packaged',
  stages: [{ stageName: 'echo', stageHandlerName: 'packaged-echo', input: process.argv[2] }],
});
const until = Date.now() + 30_000;
for (;;) {
  const current = await po.pipelines.get(pipeline.id);
  if (current.isTerminal || Date.now() > until) {
    console.log(JSON.stringify(current));
    break;
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
}
`,
    );
    // Pushed to the cluster's workers, so cluster.stop() stops it (SIGTERM: it drains, then shuts down).
    const worker = new ManagedProcess(
      'packaged-worker',
      [process.execPath, join(project, 'worker.mjs')],
      env(),
    ).start();
    cluster.workers.push(worker);

    const run = await node('run-pipeline.mjs', [input]);
    expect(run, `${run.stderr}\nworker:\n${worker.lines.join('\n')}`).toMatchObject({ code: 0 });
    const pipeline = JSON.parse(run.stdout);
    expect(pipeline, worker.lines.join('\n')).toMatchObject({
      status: 'Completed',
      stages: [{ status: 'Completed', output: input }],
    });
    pipelineId = pipeline.id;
  });

  it('the installed po command reads that pipeline from the stack', async () => {
    expect(pipelineId).toBeTypeOf('number');
    const cli = JSON.parse(readFileSync(join(ROOT, 'libs', 'cli', 'package.json'), 'utf8')) as {
      version: string;
    };
    const [version, human, json] = await Promise.all([
      po(['--version']),
      po(['pipelines', 'get', String(pipelineId)]),
      po(['-o', 'json', 'pipelines', 'get', String(pipelineId)]),
    ]);
    expect(version).toMatchObject({ code: 0, stdout: `${cli.version}\n` });
    expect(human, human.stderr).toMatchObject({ code: 0 });
    expect(human.stdout).toMatch(/^status\s+Completed$/m);
    expect(human.stdout).toMatch(/\becho\s+packaged-echo\s+Completed\b/);
    expect(json, json.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(json.stdout)).toMatchObject({
      id: pipelineId,
      status: 'Completed',
      stages: [{ output: input }],
    });
  });
});
