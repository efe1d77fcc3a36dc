// The built `po` command line (libs/cli) as a process against the five services and an SDK
// worker: what a person or a script sees, output and exit codes (libs/cli/README.md).
//
// `pipelines list` and `pipelines rerun` need GET /pipelines and POST /pipelines/{id}/rerun
// (issue 12 part 1), `schedules backfill` POST /schedules/{name}/backfill.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TEST_REDIS_URL,
  cleanupRedisPrefix,
  createTestDatabase,
  testQueuePrefix,
  type TestDatabase,
} from '@po/testing';
import {
  DEFAULT_PORTS,
  ROOT,
  startStack,
  type ServiceName,
  type StartedStack,
} from '../deploy/local/stack.mjs';
import { ManagedProcess, freePort } from './support/processes.js';

const PO = join(ROOT, 'libs', 'cli', 'bin', 'po.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('the po command line, run as a process against the stack', () => {
  let database: TestDatabase;
  let stack: StartedStack;
  let worker: ManagedProcess;
  let apiUrl: string;
  let apiKey: string;
  const prefix = testQueuePrefix('e2e');
  let dir: string;
  // Pipelines made by earlier tests, read by later ones (the tests of this file run in order).
  let completedId: number;
  let failedId: number;
  let cancelledId: number;

  /** Runs `po args…` with PO_API_URL / PO_API_KEY set; never rejects. */
  const po = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [PO, ...args],
        {
          cwd: ROOT,
          env: { ...process.env, PO_API_URL: apiUrl, PO_API_KEY: apiKey, ...env },
          timeout: 60_000,
        },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
          resolve({ code, stdout, stderr });
        },
      );
    });
  const json = async (args: string[]) => {
    const run = await po(['-o', 'json', ...args]);
    expect(run, run.stderr).toMatchObject({ code: 0 });
    return JSON.parse(run.stdout);
  };
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = {
      ...process.env,
      DATABASE_URL: database.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      HOST: '127.0.0.1',
      DATABASE_POOL_MAX: '4',
    };
    const ports: Partial<Record<ServiceName, number>> = {};
    for (const name of Object.keys(DEFAULT_PORTS) as ServiceName[]) ports[name] = await freePort();
    stack = await startStack({ env, ports, log: () => {}, color: false, readyTimeoutMs: 90_000 });
    apiUrl = stack.urls['api-gateway']!;
    const admin = await promisify(execFile)(
      process.execPath,
      ['services/api-gateway/dist/admin/cli.js', 'apps', 'create', '--name', 'cli'],
      { cwd: ROOT, env },
    );
    apiKey = (JSON.parse(admin.stdout) as { apiKey: string }).apiKey;
    worker = new ManagedProcess('cli-worker', 'examples/dist/example-worker.js', {
      ...env,
      PO_BASE_URL: apiUrl,
      PO_WORKER_BASE_URL: stack.urls['worker-gateway'],
      PO_API_KEY: apiKey,
      PO_INSTANCE_ID: 'cli-worker',
      PO_HANDLERS: 'echo,sleep,fail',
    }).start();
    dir = mkdtempSync(join(tmpdir(), 'po-cli-e2e-'));
  }, 150_000);

  afterAll(async () => {
    await worker?.stop();
    await stack?.stop();
    await cleanupRedisPrefix(prefix);
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('creates a pipeline from a YAML file and watches it stage by stage until Completed (exit 0)', async () => {
    const definition = file(
      'release.yaml',
      `# a YAML mapping as a stage input is sent as compact JSON
name: cli-release
idempotencyKey: cli-release-1
pipelineKeywords:
  - { key: env, value: prod }
stages:
  - stageName: build
    stageHandlerName: echo
    input: { ref: main }
  - stageName: test
    stageHandlerName: sleep
    input: '{"ms": 300}'
`,
    );
    const created = await json(['pipelines', 'create', '-f', definition]);
    expect(created).toMatchObject({
      created: true,
      pipeline: { name: 'cli-release', idempotencyKey: 'cli-release-1' },
    });
    completedId = created.pipeline.id;

    const again = await po(['pipelines', 'create', '-f', definition]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(
      `pipeline ${completedId} already existed for idempotency key cli-release-1`,
    );

    const watched = await po(['pipelines', 'watch', String(completedId), '--interval', '200ms']);
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toMatch(/stage build \(\d+\): .*Completed/);
    expect(watched.stdout).toMatch(/stage test \(\d+\): .*Completed/);
    expect(watched.stdout.trim().split('\n').at(-1)).toBe(`pipeline ${completedId} Completed`);
  });

  it('get prints the pipeline and its stages; -o json prints the API body', async () => {
    const [human, body] = await Promise.all([
      po(['pipelines', 'get', String(completedId)]),
      json(['pipelines', 'get', String(completedId)]),
    ]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^status\s+Completed$/m);
    expect(human.stdout).toMatch(/^keywords\s+env=prod$/m);
    expect(human.stdout).toMatch(/STAGE\s+NAME\s+HANDLER\s+STATUS/);
    expect(human.stdout).toMatch(/\bbuild\s+echo\s+Completed\s+1\b/);
    expect(body).toMatchObject({ id: completedId, status: 'Completed', isTerminal: true });
    expect(body.stages[0].output).toBe('{"ref":"main"}');
  });

  it("logs prints a stage's log lines, the stage named by name or id", async () => {
    const [byName, body, unknown] = await Promise.all([
      po(['pipelines', 'logs', String(completedId), 'build']),
      json(['pipelines', 'get', String(completedId)]),
      po(['pipelines', 'logs', String(completedId), 'deploy']),
    ]);
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout).toMatch(/Information\s+echoing 14 characters/);
    const byId = await po(['pipelines', 'logs', String(completedId), String(body.stages[1].id)]);
    expect(byId.stdout).toContain('slept 300 ms');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      `pipeline ${completedId} has no stage deploy; its stages: build (`,
    );
  });

  it('create --watch exits 4 when the pipeline Failed', async () => {
    const definition = file(
      'failing.json',
      JSON.stringify({
        name: 'cli-failing',
        stages: [
          {
            stageName: 'charge',
            stageHandlerName: 'fail',
            input: '{"code":"PAYMENT_DECLINED","retryable":false}',
          },
        ],
      }),
    );
    const run = await po([
      'pipelines',
      'create',
      '-f',
      definition,
      '--watch',
      '--interval',
      '200ms',
    ]);
    expect(run.code, run.stderr).toBe(4);
    const id = Number(/pipeline (\d+) created/.exec(run.stderr)?.[1]);
    expect(run.stdout).toContain(`pipeline ${id} Failed`);
    failedId = id;
  });

  it('cancel cancels; watch then exits 5; a second cancel is the API’s 409 pipeline_terminal (exit 1)', async () => {
    // No worker serves this handler: the pipeline waits until it is cancelled.
    const created = await json([
      'pipelines',
      'create',
      '-f',
      file(
        'waiting.yaml',
        'name: cli-waiting\nstages:\n  - { stageName: wait, stageHandlerName: nobody }\n',
      ),
    ]);
    cancelledId = created.pipeline.id;
    const cancel = await po(['pipelines', 'cancel', String(cancelledId)]);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout.trim()).toBe(`pipeline ${cancelledId} Cancelled (Cancelled)`);
    expect((await po(['pipelines', 'watch', String(cancelledId)])).code).toBe(5);
    const twice = await po(['pipelines', 'cancel', String(cancelledId)]);
    expect(twice.code).toBe(1);
    expect(twice.stdout).toBe('');
    expect(twice.stderr).toMatch(/^po: .+ \(pipeline_terminal, HTTP 409\)/);
    expect(twice.stderr).toMatch(/trace id: [0-9a-f]{32}/);
  });

  it('an invalid definition: the problem code and every field error on stderr, exit 1', async () => {
    const bad = file(
      'bad.yaml',
      'name: cli-bad\nstages:\n  - stageName: ""\n    options: { maxRetries: -1 }\n',
    );
    const [run, asJson] = await Promise.all([
      po(['pipelines', 'create', '-f', bad]),
      po(['-o', 'json', 'pipelines', 'create', '-f', bad]),
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('(validation_failed, HTTP 400)');
    expect(run.stderr).toMatch(/^ {2}\/stages\/0\/stageName: /m);
    expect(run.stderr).toMatch(/^ {2}\/stages\/0\/stageHandlerName: /m);
    expect(run.stderr).toMatch(/^ {2}\/stages\/0\/options\/maxRetries: /m);
    expect(asJson.code).toBe(1);
    const problem = JSON.parse(asJson.stderr);
    expect(problem).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(problem.errors.map((e: { field: string }) => e.field)).toEqual(
      expect.arrayContaining(['/stages/0/stageName', '/stages/0/stageHandlerName']),
    );
  });

  it('a wrong key is 401 unauthorized (exit 1); no answer is exit 3; bad usage is exit 2 with a message', async () => {
    const [unauthorized, unreachable, badId, missingFile, unknownCommand, noKey] =
      await Promise.all([
        po(['pipelines', 'get', String(completedId)], { PO_API_KEY: 'pos_not-a-key' }),
        po(['workers', 'list'], { PO_API_URL: 'http://127.0.0.1:1' }),
        po(['pipelines', 'get', 'abc']),
        po(['pipelines', 'create', '-f', join(dir, 'missing.yaml')]),
        po(['pipelines', 'frobnicate']),
        po(['workers', 'list'], { PO_API_KEY: '' }),
      ]);
    expect(unauthorized.code).toBe(1);
    expect(unauthorized.stderr).toContain('(unauthorized, HTTP 401)');
    expect(unauthorized.stderr).not.toContain('pos_not-a-key');
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toContain(
      'po: cannot reach the API (no answer from GET http://127.0.0.1:1/workers',
    );

    expect(badId).toMatchObject({ code: 2, stderr: expect.stringContaining("argument 'id'") });
    expect(missingFile).toMatchObject({ code: 2, stderr: expect.stringContaining('cannot read') });
    expect(unknownCommand).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("unknown command 'frobnicate'"),
    });
    expect(noKey).toMatchObject({ code: 2, stderr: expect.stringContaining('no API key') });
  });

  it('--help on every command, exit 0', async () => {
    const commands = [
      [],
      ['pipelines'],
      ['pipelines', 'watch'],
      ['schedules', 'apply'],
      ['workers', 'events'],
    ];
    const runs = await Promise.all(commands.map((args) => po([...args, '--help'])));
    runs.forEach((run, i) => {
      const args = commands[i]!;
      expect(run.code, args.join(' ')).toBe(0);
      expect(run.stdout).toContain(`Usage: po${args.length ? ` ${args.join(' ')}` : ''}`);
    });
    expect(runs[0]!.stdout).toContain('Exit codes:');
    expect(runs[2]!.stdout).toContain('Global Options:');
  });

  // Needs GET /pipelines (issue 12 part 1).
  it('pipelines list filters by status, name, keyword and time, as a table or JSON', async () => {
    const [completed, ended, outOfRange, table, one, badStatus, oneTable] = await Promise.all([
      json([
        'pipelines',
        'list',
        '--status',
        'Completed',
        '--name',
        'cli-',
        '--keyword',
        'env=prod',
        '--since',
        '1h',
      ]),
      json(['pipelines', 'list', '--status', 'Failed,Cancelled', '--since', '1h']),
      json([
        'pipelines',
        'list',
        '--since',
        '2025-01-01T00:00:00Z',
        '--until',
        '2025-01-02T00:00:00Z',
      ]),
      po(['pipelines', 'list', '--name', 'cli-release']),
      po(['-o', 'json', 'pipelines', 'list', '--limit', '1']),
      po(['pipelines', 'list', '--status', 'Done']),
      po(['pipelines', 'list', '--limit', '1']),
    ]);
    expect(completed.items.map((p: { id: number }) => p.id)).toEqual([completedId]);
    expect(completed.items[0]).toMatchObject({
      name: 'cli-release',
      status: 'Completed',
      finishedAt: expect.any(String),
      stageCount: 2,
    });
    expect(ended.items.map((p: { id: number }) => p.id).sort()).toEqual(
      [failedId, cancelledId].sort(),
    );
    expect(outOfRange.items).toEqual([]);

    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+STATUS\s+STAGES\s+CREATED\s+FINISHED\s+SCHEDULE$/m);
    expect(table.stdout).toMatch(
      new RegExp(`^${completedId}\\s+cli-release\\s+Completed\\s+Completed:2\\s`, 'm'),
    );

    const page = JSON.parse(one.stdout);
    expect(page.items).toHaveLength(1);
    expect(page.nextCursor).toEqual(expect.any(String));
    expect(one.stderr).toBe('');
    // For people, the way on is on stderr.
    expect(oneTable.stderr).toMatch(/^more pipelines: add --cursor \S+ \(or --all\)$/m);
    const next = await json(['pipelines', 'list', '--limit', '1', '--cursor', page.nextCursor]);
    expect(next.items[0].id).not.toBe(page.items[0].id);

    expect(badStatus).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('unknown status Done'),
    });
  });

  // Needs POST /pipelines/{id}/rerun (issue 12 part 1).
  it('rerun creates a new pipeline from a finished one; --watch follows it; a running one is a 409', async () => {
    const rerun = await json(['pipelines', 'rerun', String(completedId)]);
    expect(rerun).toMatchObject({ name: 'cli-release', rerunOf: completedId });
    expect(rerun.id).not.toBe(completedId);
    expect((await po(['pipelines', 'watch', String(rerun.id), '--interval', '200ms'])).code).toBe(
      0,
    );

    const watched = await po([
      'pipelines',
      'rerun',
      String(failedId),
      '--watch',
      '--interval',
      '200ms',
    ]);
    expect(watched.code).toBe(4);

    const running = await json([
      'pipelines',
      'create',
      '-f',
      file(
        'running.yaml',
        'name: cli-running\nstages:\n  - { stageName: wait, stageHandlerName: nobody }\n',
      ),
    ]);
    const refused = await po(['pipelines', 'rerun', String(running.pipeline.id)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('HTTP 409');
    await po(['pipelines', 'cancel', String(running.pipeline.id)]);
  });

  it('schedules: apply from YAML, get, pause, resume, trigger, runs, list, archive', async () => {
    const schedule = file(
      'schedule.yaml',
      `name: cli-nightly
kind: Cron
cronExpression: "0 3 * * *"
timeZone: Europe/Paris
definition:
  name: cli-nightly-report
  stages:
    - stageName: report
      stageHandlerName: echo
      input: { day: yesterday }
`,
    );
    const applied = await po(['schedules', 'apply', '-f', schedule]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(
      /^schedule cli-nightly created \(Active, definition v1, next run \d{4}-/,
    );
    expect((await po(['schedules', 'apply', '-f', schedule])).stdout).toContain(
      'schedule cli-nightly applied (Active, definition v1',
    );

    // Three independent chains side by side: reading and pausing, triggering, a second schedule.
    const unnamed = file(
      'unnamed.yaml',
      'kind: Interval\nintervalSeconds: 3600\ndefinition:\n  name: cli-hourly\n  stages: [{ stageName: tick, stageHandlerName: echo }]\n',
    );
    await Promise.all([
      (async () => {
        const [read, readHuman] = await Promise.all([
          json(['schedules', 'get', 'cli-nightly']),
          po(['schedules', 'get', 'cli-nightly']),
        ]);
        expect(read).toMatchObject({
          name: 'cli-nightly',
          kind: 'Cron',
          status: 'Active',
          timeZone: 'Europe/Paris',
        });
        expect(read.definition.stages[0].input).toBe('{"day":"yesterday"}');
        expect(readHuman.stdout).toMatch(/^when\s+0 3 \* \* \* \(Europe\/Paris\)$/m);
        expect((await po(['schedules', 'pause', 'cli-nightly'])).stdout.trim()).toBe(
          'schedule cli-nightly Paused (next run none)',
        );
        expect((await po(['schedules', 'resume', 'cli-nightly'])).stdout).toMatch(
          /^schedule cli-nightly Active \(next run \d{4}-/,
        );
      })(),
      (async () => {
        // A trigger works whether the schedule is Active or Paused.
        const trigger = await po(['schedules', 'trigger', 'cli-nightly', '--input', 'today']);
        expect(trigger.code, trigger.stderr).toBe(0);
        const [, runId, pipelineId] =
          /^run (\d+) \(Manual, Created\) created pipeline (\d+)/.exec(trigger.stdout) ?? [];
        expect(runId).toBeDefined();
        const [triggered, runs, runsTable] = await Promise.all([
          json(['pipelines', 'get', String(pipelineId)]),
          json(['schedules', 'runs', 'cli-nightly']),
          po(['schedules', 'runs', 'cli-nightly']),
        ]);
        expect(triggered.stages[0].input).toBe('today');
        expect(runs.items[0]).toMatchObject({
          id: Number(runId),
          trigger: 'Manual',
          pipelineId: Number(pipelineId),
        });
        expect(runsTable.stdout).toMatch(/^RUN\s+TRIGGER\s+STATUS/m);
      })(),
      (async () => {
        // The name from --name when the file has none.
        expect((await po(['schedules', 'apply', '-f', unnamed])).code).toBe(2);
        expect(
          (await po(['schedules', 'apply', '-f', unnamed, '--name', 'cli-hourly'])).stdout,
        ).toContain('schedule cli-hourly created');
      })(),
    ]);

    const [list, paused] = await Promise.all([
      po(['schedules', 'list']),
      json(['schedules', 'list', '--status', 'Paused']),
    ]);
    expect(list.stdout).toMatch(/^NAME\s+STATUS\s+KIND\s+WHEN/m);
    expect(list.stdout).toMatch(/^cli-nightly\s+Active\s+Cron\s+0 3 \* \* \* \(Europe\/Paris\)/m);
    expect(list.stdout).toMatch(/^cli-hourly\s+Active\s+Interval\s+every 3600s/m);
    expect(paused.items).toEqual([]);

    expect((await po(['schedules', 'archive', 'cli-nightly'])).stdout.trim()).toBe(
      'schedule cli-nightly Archived (next run none)',
    );
    const [refused, missing] = await Promise.all([
      po(['schedules', 'trigger', 'cli-nightly']),
      po(['schedules', 'get', 'no-such']),
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(schedule_archived, HTTP 409)');
    expect(missing.stderr).toContain('(not_found, HTTP 404)');
  });

  // Needs POST /schedules/{name}/backfill.
  it('schedules backfill creates one run per past tick, once', async () => {
    const first = await json(['schedules', 'backfill', 'cli-hourly', '--from', '3h', '--to', '1s']);
    expect(first.ticks).toBeGreaterThanOrEqual(2);
    expect(first.runs.every((r: { trigger: string }) => r.trigger === 'Backfill')).toBe(true);
    const again = await po(['schedules', 'backfill', 'cli-hourly', '--from', '3h', '--to', '1s']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^\d+ ticks, 0 pipelines created/);
  });

  it('workers list shows the SDK worker; workers events shows what it reported', async () => {
    const [workers, table] = await Promise.all([
      json(['workers', 'list']),
      po(['workers', 'list']),
    ]);
    const worker = workers.items.find((w: { instanceId: string }) => w.instanceId === 'cli-worker');
    expect(worker).toMatchObject({
      status: 'Active',
      workerName: 'example-worker',
      handlers: ['echo', 'sleep', 'fail'],
    });
    expect(table.stdout).toMatch(/^WORKER\s+INSTANCE\s+NAME\s+STATUS\s+HANDLERS/m);
    expect(table.stdout).toMatch(/\scli-worker\s+example-worker\s+Active\s+echo,sleep,fail\s/);

    const [events, unknown] = await Promise.all([
      po(['workers', 'events', worker.workerId]),
      po(['workers', 'events', 'no-such-worker']),
    ]);
    expect(events.code).toBe(0);
    expect(events.stdout).toMatch(/^ID\s+AT\s+KIND/m);
    expect(events.stdout).toMatch(/\sstarted\s/);
    expect(unknown.stderr).toContain('(not_found, HTTP 404)');
  });
});
