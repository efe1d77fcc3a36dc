import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  axeViolations,
  launchBrowser,
  screenshot,
  type BrowserSession,
} from './support/browser.js';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor, type Reply } from './support/http.js';
import { freePort } from './support/processes.js';

/**
 * The dashboard (issue 13) in Debian's headless Chromium against the real stack: the built
 * services as processes, the api-gateway serving the SPA under /ui/, example SDK workers running
 * stages. One stack and one browser page for the whole file; the steps run in order and build on
 * each other (signed in once, the workers started once). On every page visited: the planted
 * sensitive context value and the API key are nowhere in the DOM, axe-core finds no serious or
 * critical violation, and a screenshot lands in .local/artifacts/dashboard/.
 * The accessible names used here are the dashboard contract's (helpers' dashboard-contract.md).
 */
describe('the dashboard in a real browser', () => {
  const secret = `pw-${randomUUID()}`;
  const run = randomUUID().slice(0, 8);
  let cluster: Cluster;
  let key: string;
  let session: BrowserSession;
  let page: Page;
  /** Every URL the browser requested, and every console line it printed. */
  const requested: string[] = [];
  const consoleLines: string[] = [];
  const ids: Record<string, number> = {};

  const api = (method: string, path: string, json?: unknown): Promise<Reply> =>
    call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': key } });
  const create = async (name: string, body: Record<string, unknown>): Promise<number> => {
    const r = await api('POST', '/pipelines/idempotent', {
      idempotencyKey: `${run}-${name}`,
      name,
      ...body,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    ids[name] = r.body.pipeline.id as number;
    return ids[name];
  };
  /** The workerId the service gave the worker process started as `instanceId`, once it registered. */
  const workerIdOf = (instanceId: string) =>
    waitFor(`worker ${instanceId} to register`, async () => {
      const items = (await api('GET', '/workers')).body.items as {
        workerId: string;
        instanceId: string;
      }[];
      return items.find((w) => w.instanceId === instanceId)?.workerId;
    });
  const unserved = [{ stageName: 'wait', stageHandlerName: 'nobody-serves-this' }];
  const ui = (path = '') => `${cluster.apiUrl}/ui/${path}`;

  /** The checks every page gets, then its screenshot. */
  async function inspect(name: string): Promise<void> {
    const html = await page.content();
    expect(html.includes(secret), `the sensitive value is in the DOM of ${name}`).toBe(false);
    expect(html.includes(key), `the API key is in the DOM of ${name}`).toBe(false);
    expect(await axeViolations(page), `axe on ${name}`).toEqual([]);
    await screenshot(page, name);
  }
  const table = (name: string) => page.getByRole('table', { name });
  const stageNode = (stage: string) => page.getByTestId(`stage-node-${stage}`);
  /** Every value of the page's sessionStorage or localStorage, one a line. */
  const storageText = (which: 'sessionStorage' | 'localStorage') =>
    page.evaluate<string>(`Object.values(${which}).join('\\n')`);
  const nav = (name: string) => page.getByRole('link', { name, exact: true }).first();

  /** Whether the focused element is `el` itself, or inside it (the lint config has no DOM types). */
  type Focusable = { ownerDocument: { activeElement: unknown }; contains(other: unknown): boolean };
  const isFocused = (el: Locator) =>
    el.evaluate((e) => (e as unknown as Focusable).ownerDocument.activeElement === e);
  const hasFocus = (el: Locator) =>
    el.evaluate((e) =>
      (e as unknown as Focusable).contains((e as unknown as Focusable).ownerDocument.activeElement),
    );
  /** Presses Tab until `target` has the focus (at most `max` times); fails otherwise. */
  async function tabTo(target: Locator, max = 80): Promise<void> {
    for (let i = 0; i < max; i++) {
      if (await isFocused(target).catch(() => false)) return;
      await page.keyboard.press('Tab');
    }
    throw new Error(`Tab never reached ${target.toString()}`);
  }

  beforeAll(async () => {
    // The webhook receiver is on 127.0.0.1, and two quick attempts make a delivery Failed.
    cluster = await startCluster({
      env: {
        DISPATCH_SWEEP_INTERVAL_MS: '200',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_RETRY_SCHEDULE: '0,1',
      },
    });
    key = (await cluster.createApp('dashboard')).apiKey;
    session = await launchBrowser();
    page = await session.newPage();
    page.on('request', (r) => requested.push(r.url()));
    page.on('console', (m) => consoleLines.push(m.text()));
  }, 120_000);

  afterAll(async () => {
    await session?.close();
    await cluster?.stop();
  });

  it('asks for the API key, refuses a wrong one, and signs in with the right one', async () => {
    await page.goto(ui());
    const keyInput = page.getByLabel('API key');
    await expect.poll(() => keyInput.isVisible()).toBe(true);
    await inspect('sign-in');

    await keyInput.fill('po_not-a-real-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').first().isVisible()).toBe(true);
    expect(await keyInput.isVisible()).toBe(true);

    await keyInput.fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => page.getByRole('heading', { name: 'Throughput (last hour)' }).isVisible())
      .toBe(true);
    expect(await page.getByRole('heading', { name: 'Queue depth' }).isVisible()).toBe(true);
    expect(await page.getByRole('main').count()).toBe(1);
    // Kept for the tab only: sessionStorage holds it, localStorage and the URL never do.
    const storage = {
      session: await storageText('sessionStorage'),
      local: await storageText('localStorage'),
    };
    expect(storage.session).toContain(key);
    expect(storage.local).not.toContain(key);
    expect(page.url()).not.toContain(key);
    await inspect('overview');
  });

  it('shows a worker joining the fleet and its events in the activity feed, live', async () => {
    await nav('Workers').click();
    const workers = table('Workers');
    await expect.poll(() => workers.isVisible()).toBe(true);
    for (const header of ['Worker', 'Status', 'Handlers', 'Last heartbeat', 'In flight']) {
      expect(
        await workers.getByRole('columnheader', { name: header }).count(),
        header,
      ).toBeGreaterThan(0);
    }
    expect(await workers.getByRole('row').filter({ hasText: 'example-worker' }).count()).toBe(0);
    // Serves the approval, echo and fail stages; `sleep` is left for a second worker (next steps).
    cluster.startWorker('dashboard-worker', {
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: key,
      PO_INSTANCE_ID: 'dashboard-worker',
      PO_HANDLERS: 'echo,approve,fail',
    });
    const workerId = await workerIdOf('dashboard-worker');
    // No reload: the page's own refresh brings the worker and its `started` event.
    await expect
      .poll(() => workers.getByRole('row').filter({ hasText: workerId }).count(), {
        timeout: 20_000,
      })
      .toBe(1);
    const feed = page.getByRole('list', { name: 'Activity' });
    await expect
      .poll(
        () =>
          feed
            .getByRole('listitem')
            .filter({ hasText: /started/i })
            .count(),
        { timeout: 20_000 },
      )
      .toBeGreaterThan(0);
    await inspect('workers');
  });

  it('lists pipelines created through the API, including one created while it is open, and filters them', async () => {
    await create('nightly-report-eu', {
      stages: unserved,
      pipelineKeywords: [{ key: 'env', value: 'prod' }],
    });
    await create('nightly-report-us', {
      stages: unserved,
      pipelineKeywords: [{ key: 'env', value: 'staging' }],
    });
    const cancelled = await create('import-customers', {
      stages: unserved,
      pipelineKeywords: [{ key: 'env', value: 'prod' }],
    });
    expect((await api('POST', `/pipelines/${cancelled}/cancel`)).status).toBe(200);
    const schedule = await api('PUT', '/schedules/hourly-export', {
      kind: 'Cron',
      cronExpression: '15 * * * *',
      timeZone: 'Europe/Berlin',
      definition: { name: 'hourly-export-run', stages: unserved },
    });
    expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
    expect((await api('POST', '/schedules/hourly-export/trigger')).status).toBe(201);

    await nav('Pipelines').click();
    const list = table('Pipelines');
    await expect.poll(() => list.isVisible()).toBe(true);
    for (const header of ['Name', 'Status', 'Progress', 'Schedule', 'Age']) {
      expect(
        await list.getByRole('columnheader', { name: header }).count(),
        header,
      ).toBeGreaterThan(0);
    }
    const names = [
      'nightly-report-eu',
      'nightly-report-us',
      'import-customers',
      'hourly-export-run',
      'late-arrival',
    ];
    const shown = async () => {
      const out: string[] = [];
      for (const n of names)
        if ((await list.getByRole('link', { name: n, exact: true }).count()) > 0) out.push(n);
      return out;
    };
    await expect
      .poll(shown)
      .toEqual(['nightly-report-eu', 'nightly-report-us', 'import-customers', 'hourly-export-run']);
    // Created while the list is open: the auto-refresh brings it in.
    await create('late-arrival', { stages: unserved });
    await expect.poll(shown, { timeout: 10_000 }).toEqual(names);
    await inspect('pipelines');

    await page.getByLabel('Name', { exact: true }).fill('nightly-report');
    await expect.poll(shown).toEqual(['nightly-report-eu', 'nightly-report-us']);
    expect(new URL(page.url()).searchParams.get('name')).toBe('nightly-report');
    await page.getByLabel('Name', { exact: true }).fill('');
    await page.getByLabel('Keyword', { exact: true }).fill('env=prod');
    await expect.poll(shown).toEqual(['nightly-report-eu', 'import-customers']);
    await page.getByLabel('Keyword', { exact: true }).fill('');
    await page.getByLabel('Schedule', { exact: true }).fill('hourly-export');
    await expect.poll(shown).toEqual(['hourly-export-run']);
    await page.getByLabel('Schedule', { exact: true }).fill('');
    await expect.poll(shown).toEqual(names);

    // Status is a multi-select: pick Cancelled from its options.
    await page.getByRole('combobox', { name: 'Status' }).click();
    await page.getByRole('option', { name: 'Cancelled', exact: true }).click();
    await page.keyboard.press('Escape');
    await expect.poll(shown).toEqual(['import-customers']);
    expect(new URL(page.url()).searchParams.getAll('status')).toEqual(['Cancelled']);
    await inspect('pipelines-filtered');
  });

  it('shows a pipeline whose stages go from Pending to Completed as a worker runs them, with the sensitive value masked', async () => {
    const sleep = (ms: number) => JSON.stringify({ ms });
    await create('etl-with-branches', {
      pipelineContextItems: [
        { key: 'dbPassword', value: secret, isSensitive: true },
        { key: 'region', value: 'eu-west' },
      ],
      pipelineKeywords: [{ key: 'env', value: 'prod' }],
      stages: [
        { stageName: 'extract', stageHandlerName: 'sleep', input: sleep(300) },
        {
          stageName: 'transform',
          stageHandlerName: 'sleep',
          input: sleep(300),
          options: { dependsOn: ['extract'] },
        },
        {
          stageName: 'enrich',
          stageHandlerName: 'sleep',
          input: sleep(600),
          options: { dependsOn: ['extract'] },
        },
        {
          stageName: 'load',
          stageHandlerName: 'sleep',
          input: sleep(300),
          options: { dependsOn: ['transform', 'enrich'] },
        },
      ],
    });
    await page.goto(ui('pipelines'));
    await page.getByRole('link', { name: 'etl-with-branches', exact: true }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'etl-with-branches' }).isVisible())
      .toBe(true);
    await expect.poll(() => stageNode('extract').textContent()).toContain('Pending');
    // The others wait for their dependencies: not dispatched yet.
    for (const stage of ['transform', 'enrich', 'load'])
      expect(await stageNode(stage).textContent()).toContain('NotStarted');
    const stages = table('Stages');
    for (const header of ['Name', 'Status', 'Attempt', 'Worker', 'Started', 'Duration']) {
      expect(
        await stages.getByRole('columnheader', { name: header }).count(),
        header,
      ).toBeGreaterThan(0);
    }
    // The Context section shows the key with the value masked; the raw value is nowhere.
    expect(await page.getByText('dbPassword').count()).toBeGreaterThan(0);
    expect(await page.getByText('••••••').count()).toBeGreaterThan(0);
    expect(await page.getByText('eu-west').count()).toBeGreaterThan(0);
    await inspect('pipeline-pending');

    cluster.startWorker('dashboard-sleeper', {
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: key,
      PO_INSTANCE_ID: 'dashboard-sleeper',
      PO_HANDLERS: 'sleep',
    });
    for (const stage of ['extract', 'transform', 'enrich', 'load']) {
      await expect
        .poll(() => stageNode(stage).textContent(), { timeout: 30_000 })
        .toContain('Completed');
    }
    await expect
      .poll(() => stages.getByRole('row').filter({ hasText: 'Completed' }).count())
      .toBe(4);
    // The lease holder of each stage: the worker that ran it.
    const sleeper = await workerIdOf('dashboard-sleeper');
    expect(await stages.getByRole('row').filter({ hasText: sleeper }).count()).toBe(4);
    expect((await api('GET', `/pipelines/${ids['etl-with-branches']}`)).body.status).toBe(
      'Completed',
    );
    await inspect('pipeline');
  });

  it('approves a stage waiting for approval, after a confirmation', async () => {
    const id = await create('release-approval', {
      stages: [
        { stageName: 'build', stageHandlerName: 'echo', input: 'v1.2.3' },
        {
          stageName: 'sign-off',
          stageHandlerName: 'approve',
          input: 'release v1.2.3 to production',
        },
        { stageName: 'ship', stageHandlerName: 'echo', input: 'shipped' },
      ],
    });
    await waitFor('sign-off to wait for approval', async () => {
      const p = (await api('GET', `/pipelines/${id}`)).body;
      return p.stageStatuses[1] === 'WaitingForApproval' ? p : undefined;
    });
    await page.goto(ui(`pipelines/${id}`));
    await expect.poll(() => stageNode('sign-off').textContent()).toContain('WaitingForApproval');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await inspect('approve-dialog');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => dialog.count()).toBe(0);
    for (const stage of ['sign-off', 'ship']) {
      await expect
        .poll(() => stageNode(stage).textContent(), { timeout: 20_000 })
        .toContain('Completed');
    }
    expect((await api('GET', `/pipelines/${id}`)).body.status).toBe('Completed');
    await inspect('pipeline-approved');
  });

  it('cancels a pipeline with the keyboard alone: Tab to the action, Enter, Escape closes, Tab to Confirm, Enter', async () => {
    const id = ids['nightly-report-eu']!;
    await page.goto(ui(`pipelines/${id}`));
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'nightly-report-eu' }).isVisible())
      .toBe(true);
    const action = page.getByRole('button', { name: 'Cancel pipeline' });
    await tabTo(action);
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.isVisible()).toBe(true);
    // Focus moves into the dialog; Escape closes it and nothing is cancelled.
    await expect.poll(() => hasFocus(dialog)).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog.count()).toBe(0);
    expect((await api('GET', `/pipelines/${id}`)).body.status).not.toBe('Cancelled');

    await tabTo(action);
    await page.keyboard.press('Enter');
    await expect.poll(() => dialog.isVisible()).toBe(true);
    const confirm = dialog.getByRole('button', { name: 'Confirm' });
    await tabTo(confirm, 20);
    // The focus stayed trapped in the dialog on its way to Confirm.
    expect(await hasFocus(dialog)).toBe(true);
    await page.keyboard.press('Enter');
    await waitFor('the pipeline to be cancelled', async () =>
      (await api('GET', `/pipelines/${id}`)).body.status === 'Cancelled' ? true : undefined,
    );
    await expect
      .poll(() => page.getByText('Cancelled').count(), { timeout: 10_000 })
      .toBeGreaterThan(0);
    await inspect('pipeline-cancelled');
  });

  it('lists schedules with their next run, and pauses one after a confirmation', async () => {
    await nav('Schedules').click();
    const list = table('Schedules');
    await expect.poll(() => list.isVisible()).toBe(true);
    for (const header of ['Name', 'Kind', 'Expression', 'Zone', 'Next run', 'State', 'Health']) {
      expect(
        await list.getByRole('columnheader', { name: header }).count(),
        header,
      ).toBeGreaterThan(0);
    }
    const row = list.getByRole('row').filter({ hasText: 'hourly-export' });
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toContain('Europe/Berlin');
    await inspect('schedules');

    await list.getByRole('link', { name: 'hourly-export', exact: true }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'hourly-export' }).isVisible())
      .toBe(true);
    expect(await table('Runs').getByRole('row').count()).toBeGreaterThan(1);
    await inspect('schedule');
    expect(await page.getByRole('button', { name: 'Resume', exact: true }).isEnabled()).toBe(false);
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await waitFor('the schedule to be paused', async () =>
      (await api('GET', '/schedules/hourly-export')).body.status === 'Paused' ? true : undefined,
    );
    // The page follows: Resume becomes possible, Pause no longer, the state reads Paused.
    await expect
      .poll(() => page.getByRole('button', { name: 'Resume', exact: true }).isEnabled())
      .toBe(true);
    expect(await page.getByRole('button', { name: 'Pause', exact: true }).isEnabled()).toBe(false);
    await expect.poll(() => page.getByText('Paused', { exact: true }).count()).toBeGreaterThan(0);
    await inspect('schedule-paused');
  });

  it('lists handlers with their limits, and pauses one from the page, which the API then shows', async () => {
    const name = `payments-${run}`;
    expect((await api('PUT', `/handlers/${name}`, { maxConcurrent: 3 })).status).toBe(200);
    await nav('Handlers').click();
    const list = table('Handlers');
    await expect.poll(() => list.isVisible()).toBe(true);
    for (const header of [
      'Handler',
      'State',
      'Running',
      'Backlog',
      'Throttled',
      'Oldest wait',
      'Limits',
    ]) {
      expect(
        await list.getByRole('columnheader', { name: header }).count(),
        header,
      ).toBeGreaterThan(0);
    }
    const row = list.getByRole('row').filter({ hasText: name });
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toContain('3 at once');
    await inspect('handlers');
    await row.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await waitFor('the handler to be paused', async () =>
      (await api('GET', `/handlers/${name}`)).body.paused === true ? true : undefined,
    );
    await expect
      .poll(() => row.getByRole('button', { name: 'Resume', exact: true }).count())
      .toBe(1);
    expect(await row.textContent()).toContain('Paused');
  });

  it('reruns the selected failed pipelines from their failure: the completed stage is carried over', async () => {
    const names = [`incident-a-${run}`, `incident-b-${run}`];
    for (const name of names) {
      await create(name, {
        stages: [
          { stageName: 'prepare', stageHandlerName: 'echo', input: 'ready' },
          {
            stageName: 'call-partner',
            stageHandlerName: 'fail',
            input: '{"code":"PARTNER_DOWN","retryable":false}',
          },
        ],
      });
    }
    for (const name of names) {
      await waitFor(`${name} to fail`, async () =>
        (await api('GET', `/pipelines/${ids[name]}`)).body.status === 'Failed' ? true : undefined,
      );
    }
    await nav('Pipelines').click();
    await page.getByRole('textbox', { name: 'Name' }).fill(`incident-`);
    const list = table('Pipelines');
    for (const name of names) {
      const box = list.getByRole('checkbox', { name: `Select pipeline ${name} (${ids[name]})` });
      await expect.poll(() => box.count(), { timeout: 10_000 }).toBe(1);
      await box.check();
    }
    await page.getByRole('button', { name: 'Rerun 2 from failure' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await expect
      .poll(() => page.getByText('Rerun from failure: 2 done, 0 not done').count(), {
        timeout: 10_000,
      })
      .toBe(1);
    await inspect('pipelines-rerun-selected');
    for (const name of names) {
      const original = (await api('GET', `/pipelines/${ids[name]}`)).body;
      expect(original.reruns).toHaveLength(1);
      const rerun = (await api('GET', `/pipelines/${original.reruns[0]}`)).body;
      expect(rerun.stages[0]).toMatchObject({
        status: 'Completed',
        carriedOverFrom: original.stages[0].id,
        output: original.stages[0].output,
      });
    }
  });

  it('adds a webhook and shows its secret once; its log shows a delivery that failed, and Retry sends it again', async () => {
    let answer = 500;
    const received: string[] = [];
    const receiver: Server = createServer((req, res) => {
      received.push(String(req.headers['webhook-id']));
      req.resume().on('end', () => res.writeHead(answer).end());
    });
    const port = await freePort();
    await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
    try {
      const name = `ops-${run}`;
      await nav('Webhooks').click();
      await page.getByRole('button', { name: 'Add webhook' }).click();
      const dialog = page.getByRole('dialog');
      await expect.poll(() => dialog.isVisible()).toBe(true);
      await dialog.getByRole('textbox', { name: 'Name' }).fill(name);
      await dialog.getByRole('textbox', { name: 'URL' }).fill(`http://127.0.0.1:${port}/hook`);
      await dialog.getByRole('checkbox', { name: 'pipeline.completed' }).check();
      await dialog.getByRole('button', { name: 'Add', exact: true }).click();
      const shown = page.getByLabel('signing secret', { exact: true });
      await expect.poll(() => shown.count(), { timeout: 10_000 }).toBe(1);
      const signingSecret = (await shown.textContent()) ?? '';
      expect(signingSecret).toMatch(/^whsec_/);
      const stored = (await api('GET', `/webhooks/${name}`)).body;
      expect(stored).toMatchObject({
        name,
        events: ['pipeline.failed', 'pipeline.completed'],
        enabled: true,
      });
      expect(JSON.stringify(stored)).not.toContain(signingSecret);

      const id = await create(`hooked-${run}`, {
        stages: [{ stageName: 'only', stageHandlerName: 'echo', input: 'x' }],
      });
      await waitFor(
        'the delivery to fail twice',
        async () => {
          const d = (await api('GET', `/webhooks/${name}/deliveries`)).body.items[0];
          return d?.status === 'Failed' ? d : undefined;
        },
        30_000,
        200,
      );
      const log = table(`Deliveries of ${name}`);
      const row = log.getByRole('row').filter({ hasText: 'pipeline.completed' });
      await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('Failed');
      expect(await row.textContent()).toContain('500');
      await inspect('webhooks');

      answer = 204;
      await row.getByRole('button', { name: 'Retry', exact: true }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
      await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('Delivered');
      expect(received).toHaveLength(3);
      expect(new Set(received).size).toBe(1);
      expect(id).toBeGreaterThan(0);
    } finally {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('signs out, leaving no key behind; the key was never in a URL or a console line', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByLabel('API key').isVisible()).toBe(true);
    expect(await storageText('sessionStorage')).not.toContain(key);
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((u) => u.includes(key))).toEqual([]);
    expect(consoleLines.filter((l) => l.includes(key) || l.includes(secret))).toEqual([]);
    // No script error and no CSP refusal on any page.
    expect(
      session.errors.filter((e) => e.startsWith('pageerror') || /Content Security Policy/i.test(e)),
    ).toEqual([]);
  });
});
