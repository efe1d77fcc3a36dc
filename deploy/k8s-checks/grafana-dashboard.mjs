#!/usr/bin/env node
// Grafana dashboard checks (run by deploy/k8s-checks/run.sh, which passes HELM; decision 0095):
//   1. helm/pipeline-orchestration/dashboards/pipeline-orchestration.json parses; every panel but
//      the rows has PromQL targets that parse, call only PromQL functions and select only the
//      product's documented metrics (docs/observability.md), each scoped by the $namespace variable;
//   2. the Prometheus data source is a template variable: no data source uid is written in;
//   3. broken copies of the dashboard are refused, so the check cannot pass vacuously;
//   4. the chart renders the ConfigMap only when grafanaDashboard.enabled, with the sidecar's label
//      (key, value and namespace as configured) and the file's JSON unchanged, and refuses a label
//      key Kubernetes would refuse.
// Whether the services really serve those metric names is e2e/tracing.e2e.test.ts's part.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { analyse, dashboardPanels, dashboardQueries } from './promql.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHART = join(ROOT, 'helm', 'pipeline-orchestration');
const FILE = join(CHART, 'dashboards', 'pipeline-orchestration.json');
const HELM = process.env.HELM;
if (!HELM) throw new Error('set HELM to the helm binary (deploy/k8s-checks/run.sh does)');

/** Metric families documented in docs/observability.md's table (`| \`po_…\` | type |`). */
const DOCUMENTED = new Set(
  [...readFileSync(join(ROOT, 'docs', 'observability.md'), 'utf8').matchAll(/^\| `(po_[a-z0-9_]+)` \| (counter|gauge|histogram) \|/gm)].map((m) => m[1]),
);
const family = (name) => name.replace(/_(bucket|sum|count)$/, '');
const TEMPLATED_UID = /^\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?$/;

/** The problems of a dashboard object; [] when it is fine. */
function dashboardProblems(dashboard) {
  const problems = [];
  const variables = dashboard.templating?.list ?? [];
  const dsVariable = variables.find((v) => v.type === 'datasource' && v.query === 'prometheus');
  if (!dsVariable) problems.push('no Prometheus data source variable (templating.list type datasource, query prometheus)');
  if (!dashboard.uid || !dashboard.title) problems.push('uid and title are required (the sidecar provisions by uid)');
  // Every data source reference anywhere (panels, targets, variables) must be a variable.
  const walk = (value, path) => {
    if (Array.isArray(value)) return value.forEach((v, i) => walk(v, `${path}[${i}]`));
    if (typeof value !== 'object' || value === null) return;
    for (const [key, v] of Object.entries(value)) {
      if (key === 'datasource' && v !== null) {
        const uid = typeof v === 'string' ? v : v.uid;
        if (typeof uid !== 'string' || !TEMPLATED_UID.test(uid)) problems.push(`${path}.datasource names a data source (${JSON.stringify(v)}) instead of \${${dsVariable?.name ?? 'datasource'}}`);
      } else walk(v, `${path}.${key}`);
    }
  };
  walk(dashboard, 'dashboard');
  const ids = new Set();
  for (const panel of dashboardPanels(dashboard)) {
    if (ids.has(panel.id)) problems.push(`panel id ${panel.id} is used twice`);
    ids.add(panel.id);
    if (!panel.gridPos) problems.push(`panel "${panel.title}" has no gridPos`);
    if (panel.type === 'row') continue;
    const targets = panel.targets ?? [];
    if (targets.length === 0) problems.push(`panel "${panel.title}" has no targets`);
    for (const target of targets) {
      if (typeof target.expr !== 'string' || target.expr.trim() === '') problems.push(`panel "${panel.title}" ${target.refId}: no PromQL expr`);
    }
  }
  for (const { where, expr } of dashboardQueries(dashboard)) {
    if (typeof expr !== 'string' || expr.trim() === '') continue;
    let parsed;
    try {
      parsed = analyse(expr);
    } catch (err) {
      problems.push(`${where}: ${err.message}`);
      continue;
    }
    if (parsed.selectors.length === 0) problems.push(`${where}: selects no metric`);
    for (const s of parsed.selectors) {
      if (!DOCUMENTED.has(family(s.name))) problems.push(`${where}: ${s.name} is not a metric docs/observability.md documents`);
      if (!where.startsWith('variable') && !s.labels.includes('namespace')) problems.push(`${where}: ${s.name} is not scoped by namespace=~"$namespace"`);
    }
  }
  return problems;
}

function helm(args) {
  return spawnSync(HELM, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
}

/** The ConfigMaps a render holds, or the error text when helm refused the values. */
function render(setArgs) {
  const out = helm(['template', 'po', CHART, '-n', 'pipelines', '--kube-version', '1.30.0', ...setArgs]);
  if (out.status !== 0) return { error: out.stderr };
  const docs = parseAllDocuments(out.stdout).map((d) => d.toJS()).filter(Boolean);
  return { configMaps: docs.filter((d) => d.kind === 'ConfigMap') };
}

const problems = [];
const text = readFileSync(FILE, 'utf8');
let dashboard;
try {
  dashboard = JSON.parse(text);
} catch (err) {
  problems.push(`${FILE} is not JSON: ${err.message}`);
}

if (dashboard) {
  problems.push(...dashboardProblems(dashboard));
  const panels = dashboardPanels(dashboard).filter((p) => p.type !== 'row');
  // ---- broken copies must be refused
  const broken = {
    'a panel without expr': (d) => (dashboardPanels(d).find((p) => p.type !== 'row').targets[0].expr = ''),
    'a hard-coded data source uid': (d) => (dashboardPanels(d).find((p) => p.type !== 'row').datasource = { type: 'prometheus', uid: 'P1809F7CD0C75ACF3' }),
    'an undocumented metric': (d) => (dashboardPanels(d).find((p) => p.type !== 'row').targets[0].expr = 'sum(rate(po_no_such_total{namespace=~"$namespace"}[5m]))'),
    'a misspelled function': (d) => (dashboardPanels(d).find((p) => p.type !== 'row').targets[0].expr = 'sum(rat(po_results_applied_total{namespace=~"$namespace"}[5m]))'),
    'an unscoped selector': (d) => (dashboardPanels(d).find((p) => p.type !== 'row').targets[0].expr = 'sum(po_deliveries_inflight)'),
    'no data source variable': (d) => (d.templating.list = d.templating.list.filter((v) => v.type !== 'datasource')),
  };
  for (const [what, breakIt] of Object.entries(broken)) {
    const copy = structuredClone(dashboard);
    breakIt(copy);
    if (dashboardProblems(copy).length === 0) problems.push(`the check accepts a dashboard with ${what}`);
  }

  // ---- the ConfigMap, rendered only when enabled
  const labelled = (cms, key, value) => cms.filter((cm) => cm.metadata?.labels?.[key] === value);
  const off = render([]);
  if (off.error) problems.push(`helm template (defaults) failed: ${off.error}`);
  else if (off.configMaps.some((cm) => cm.metadata?.labels?.grafana_dashboard !== undefined || cm.data?.['pipeline-orchestration.json'])) {
    problems.push('the dashboard ConfigMap renders while grafanaDashboard.enabled is false');
  }
  const on = render(['--set', 'grafanaDashboard.enabled=true']);
  if (on.error) problems.push(`helm template (grafanaDashboard.enabled) failed: ${on.error}`);
  else {
    const [cm, ...more] = labelled(on.configMaps, 'grafana_dashboard', '1');
    if (!cm || more.length > 0) problems.push('grafanaDashboard.enabled: expected one ConfigMap labelled grafana_dashboard: "1"');
    else {
      if (cm.metadata.namespace !== 'pipelines') problems.push(`the ConfigMap is in ${cm.metadata.namespace}, not the release's namespace`);
      let shipped;
      try {
        shipped = JSON.parse(cm.data['pipeline-orchestration.json']);
      } catch (err) {
        problems.push(`the ConfigMap's pipeline-orchestration.json is not JSON: ${err.message}`);
      }
      if (shipped && JSON.stringify(shipped) !== JSON.stringify(dashboard)) problems.push('the ConfigMap does not carry dashboards/pipeline-orchestration.json unchanged');
    }
  }
  const custom = render([
    '--set', 'grafanaDashboard.enabled=true',
    '--set', 'grafanaDashboard.namespace=monitoring',
    '--set', 'grafanaDashboard.label=example.com/dashboard',
    '--set-string', 'grafanaDashboard.labelValue=pipelines',
    '--set-string', 'grafanaDashboard.annotations.grafana_folder=Pipelines',
  ]);
  if (custom.error) problems.push(`helm template (custom label) failed: ${custom.error}`);
  else {
    const [cm] = labelled(custom.configMaps, 'example.com/dashboard', 'pipelines');
    if (!cm) problems.push('grafanaDashboard.label/labelValue are not the ConfigMap\'s label');
    else {
      if (cm.metadata.namespace !== 'monitoring') problems.push('grafanaDashboard.namespace is not the ConfigMap\'s namespace');
      if (cm.metadata.annotations?.grafana_folder !== 'Pipelines') problems.push('grafanaDashboard.annotations are not on the ConfigMap');
      if (cm.metadata.labels.grafana_dashboard !== undefined) problems.push('the default label is there besides the configured one');
    }
  }
  const bad = render(['--set', 'grafanaDashboard.enabled=true', '--set', 'grafanaDashboard.label=not a label']);
  if (!bad.error || !/grafanaDashboard/.test(bad.error)) problems.push('a label key Kubernetes refuses is not refused by values.schema.json');

  if (problems.length === 0) {
    const exprs = dashboardQueries(dashboard).length;
    console.log(`grafana dashboard: ${panels.length} panels, ${exprs} PromQL expressions, all on documented metrics; ConfigMap only when enabled`);
  }
}

if (problems.length > 0) {
  console.error(`dashboard checks failed:\n  - ${problems.join('\n  - ')}`);
  process.exit(1);
}
