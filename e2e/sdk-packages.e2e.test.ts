// The Python and Go SDKs as a user gets them (issue 30 item 6): the Python one installed with pip
// from its folder into a fresh virtual environment without network, the Go one required as a
// module by a project of the user's own; each project outside the workspace runs a worker against
// the real services.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../deploy/local/stack.mjs';
import { startCluster, type Cluster } from './support/cluster.js';
import { exec } from './support/exec.js';
import { call, waitFor } from './support/http.js';
import { ManagedProcess } from './support/processes.js';

describe('the Python and Go SDKs, installed outside the workspace', () => {
  let cluster: Cluster;
  let apiKey: string;
  let base: string;

  beforeAll(async () => {
    base = mkdtempSync(join(realpathSync(tmpdir()), 'po-sdk-packages-'));
    cluster = await startCluster({ replicas: { 'scheduler-service': 0 } });
    apiKey = (await cluster.createApp('sdk-packages')).apiKey;
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  /** Starts the worker, runs one pipeline on `handler`, and returns its first stage's output. */
  async function roundTrip(label: string, command: string[], handler: string, input: string): Promise<string> {
    const worker = new ManagedProcess(label, command, {
      ...process.env,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: apiKey,
      PO_INSTANCE_ID: label,
      PO_HANDLERS: handler,
    });
    cluster.workers.push(worker);
    worker.start();
    const created = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
      json: { idempotencyKey: `${label}-${Date.now()}`, name: label, stages: [{ stageName: 'echo', stageHandlerName: handler, input }] },
      headers: { 'x-api-key': apiKey },
    });
    expect(created.status).toBe(201);
    const id = created.body.pipeline.id as number;
    const done = await waitFor(`${label}'s pipeline`, async () => {
      const r = await call(cluster.apiUrl, 'GET', `/pipelines/${id}`, { headers: { 'x-api-key': apiKey } });
      return r.body.isTerminal ? r.body : undefined;
    }, 30_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${worker.lines.slice(-20).join('\n')}`);
    });
    expect(done.status).toBe('Completed');
    return done.stages[0].output as string;
  }

  it('Python: pip installs the SDK from its folder into a fresh venv with no index, and a worker on it runs a stage', async () => {
    const venv = join(base, 'venv');
    expect(await exec('python3', ['-m', 'venv', venv], base)).toMatchObject({ code: 0 });
    // --no-index: no network; --no-build-isolation: the build uses what the venv already has.
    const pip = await exec(join(venv, 'bin', 'pip'), ['install', '--no-index', '--no-build-isolation', join(ROOT, 'libs', 'worker-sdk-python')], base);
    expect(pip, pip.stderr).toMatchObject({ code: 0 });
    const where = await exec(join(venv, 'bin', 'python'), ['-c', 'import po_worker; print(po_worker.__file__)'], base);
    expect(where.stdout.trim().startsWith(join(venv, 'lib'))).toBe(true);

    writeFileSync(
      join(base, 'worker.py'),
      `import os
import po_worker

po_worker.Worker(
    base_url=os.environ["PO_WORKER_BASE_URL"],
    api_key=os.environ["PO_API_KEY"],
    instance_id=os.environ["PO_INSTANCE_ID"],
    handlers={os.environ["PO_HANDLERS"]: lambda ctx: ctx.input},
).run()
`,
    );
    const input = '{"from":"a venv","ünïcode":true}';
    expect(await roundTrip('python-installed', [join(venv, 'bin', 'python'), join(base, 'worker.py')], 'py-installed', input)).toBe(input);
  });

  it('Go: a module of its own requires the SDK (offline, GOPROXY=off) and a worker built from it runs a stage', async () => {
    const project = join(base, 'go-project');
    const env = { ...process.env, GOPROXY: 'off', GOFLAGS: '-mod=mod' };
    mkdirSync(project);
    writeFileSync(
      join(project, 'go.mod'),
      `module example.com/installed

go 1.19

require github.com/po-platform/worker-sdk-go v0.5.0

replace github.com/po-platform/worker-sdk-go => ${join(ROOT, 'libs', 'worker-sdk-go')}
`,
    );
    writeFileSync(
      join(project, 'main.go'),
      `package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	worker "github.com/po-platform/worker-sdk-go"
)

func main() {
	w, err := worker.New(worker.Options{
		BaseURL:    os.Getenv("PO_WORKER_BASE_URL"),
		APIKey:     os.Getenv("PO_API_KEY"),
		InstanceID: os.Getenv("PO_INSTANCE_ID"),
	})
	if err != nil {
		panic(err)
	}
	w.Register(os.Getenv("PO_HANDLERS"), func(_ context.Context, s *worker.Stage) (any, error) { return s.Input, nil })
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		panic(err)
	}
}
`,
    );
    const build = await exec('go', ['build', '-o', 'installed', '.'], project, env);
    expect(build, build.stderr).toMatchObject({ code: 0 });
    const input = 'from a Go module of its own ✓';
    expect(await roundTrip('go-installed', [join(project, 'installed')], 'go-installed', input)).toBe(input);
  });
});
