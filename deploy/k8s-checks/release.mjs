#!/usr/bin/env node
// Release checks (run by deploy/k8s-checks/run.sh, so part of `npm test`; decision 0091):
//   1. helm/pipeline-orchestration/README.md is what @bitnami/readme-generator-for-helm makes from
//      the `## @param` comments of values.yaml (every value documented, the table up to date);
//   2. LICENSE is the Apache License 2.0, unmodified, and every package.json and Chart.yaml say so;
//   3. one version everywhere: package.json files, Chart.yaml appVersion, the image's VERSION and
//      the newest CHANGELOG.md section;
//   4. Chart.yaml carries well-formed Artifact Hub annotations, and the chart and the image name the
//      same source repository;
//   5. .changeset/config.json keeps the packages in one group, and each pending changeset parses.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHART = join(ROOT, 'helm', 'pipeline-orchestration');
const read = (...parts) => readFileSync(join(ROOT, ...parts), 'utf8');
/** sha256 of https://www.apache.org/licenses/LICENSE-2.0.txt (11,358 bytes). */
const APACHE_2_0_SHA256 = 'cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30';
const LICENSE = 'Apache-2.0';
const CHANGE_KINDS = ['added', 'changed', 'deprecated', 'removed', 'fixed', 'security'];
const BUMPS = ['major', 'minor', 'patch', 'none'];

const problems = [];
const warnings = [];
const check = (ok, message) => (ok ? undefined : problems.push(message));
const isUrl = (value) =>
  typeof value === 'string' && /^https?:\/\/[^\s/]+\.[^\s/]+(\/\S*)?$/.test(value);

// ---- 1. the chart README, regenerated into a copy and compared
{
  const work = mkdtempSync(join(tmpdir(), 'chart-readme-'));
  try {
    const copy = join(work, 'README.md');
    const committed = readFileSync(join(CHART, 'README.md'), 'utf8');
    writeFileSync(copy, committed);
    const generator = join(
      ROOT,
      'node_modules',
      '@bitnami',
      'readme-generator-for-helm',
      'bin',
      'index.js',
    );
    const run = spawnSync(
      process.execPath,
      [generator, '-v', join(CHART, 'values.yaml'), '-r', copy],
      { encoding: 'utf8' },
    );
    if (run.status !== 0) {
      const errors = `${run.stdout}${run.stderr}`
        .split('\n')
        .filter((l) => /^ERROR: (Missing|Metadata)/.test(l));
      problems.push(
        `readme-generator refused values.yaml (every value needs a \`## @param\` comment):\n    ${errors.join('\n    ')}`,
      );
    } else {
      const fresh = readFileSync(copy, 'utf8');
      if (fresh !== committed) {
        const a = committed.split('\n');
        const b = fresh.split('\n');
        const at = a.findIndex((line, i) => line !== b[i]);
        problems.push(
          `helm/pipeline-orchestration/README.md is out of date with values.yaml: run \`npm run chart:readme\`\n` +
            `    first difference at line ${at + 1}:\n    - ${a[at] ?? '(end of file)'}\n    + ${b[at] ?? '(end of file)'}`,
        );
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

// ---- 2. the licence
const chart = parse(read('helm', 'pipeline-orchestration', 'Chart.yaml'));
const annotations = chart.annotations ?? {};
{
  const sha = createHash('sha256')
    .update(readFileSync(join(ROOT, 'LICENSE')))
    .digest('hex');
  check(
    sha === APACHE_2_0_SHA256,
    `LICENSE is not the unmodified Apache License 2.0 text (sha256 ${sha})`,
  );
}
const root = JSON.parse(read('package.json'));
const workspaces = root.workspaces.flatMap((glob) =>
  glob.endsWith('/*')
    ? readdirSync(join(ROOT, glob.slice(0, -2)), { withFileTypes: true })
        .filter(
          (d) =>
            d.isDirectory() && existsSync(join(ROOT, glob.slice(0, -2), d.name, 'package.json')),
        )
        .map((d) => `${glob.slice(0, -2)}/${d.name}`)
    : [glob],
);
const manifests = [
  ['package.json', root],
  ...workspaces.map((ws) => [`${ws}/package.json`, JSON.parse(read(ws, 'package.json'))]),
];
for (const [file, pkg] of manifests)
  check(
    pkg.license === LICENSE,
    `${file}: "license" is ${JSON.stringify(pkg.license)}, not "${LICENSE}"`,
  );
check(
  annotations['artifacthub.io/license'] === LICENSE,
  `Chart.yaml: artifacthub.io/license is not ${LICENSE}`,
);

// ---- 3. one version
const dockerfile = read('deploy', 'docker', 'Dockerfile');
const imageVersion = /^ARG VERSION=(\S+)$/m.exec(dockerfile)?.[1];
const changelogVersion = /^## (\d+\.\d+\.\d+\S*)/m.exec(read('CHANGELOG.md'))?.[1];
const version = root.version;
for (const [file, pkg] of manifests.slice(1))
  check(pkg.version === version, `${file}: version ${pkg.version}, the product is ${version}`);
check(
  chart.appVersion === version,
  `Chart.yaml appVersion ${chart.appVersion}, package.json ${version}`,
);
check(
  imageVersion === version,
  `deploy/docker/Dockerfile ARG VERSION=${imageVersion}, package.json ${version}`,
);
check(
  changelogVersion === version,
  `CHANGELOG.md's newest section is ${changelogVersion}, package.json ${version}`,
);

// ---- 4. Artifact Hub and the source repository
function yamlList(key, itemOk) {
  let list;
  try {
    list = parse(annotations[key] ?? '');
  } catch (err) {
    return problems.push(`Chart.yaml ${key} is not YAML: ${err.message}`);
  }
  check(Array.isArray(list) && list.length > 0, `Chart.yaml ${key} is not a non-empty YAML list`);
  for (const item of Array.isArray(list) ? list : [])
    check(itemOk(item), `Chart.yaml ${key}: bad entry ${JSON.stringify(item)}`);
}
yamlList('artifacthub.io/links', (l) => typeof l?.name === 'string' && isUrl(l.url));
yamlList(
  'artifacthub.io/changes',
  (c) =>
    CHANGE_KINDS.includes(c?.kind) && typeof c.description === 'string' && c.description.length > 0,
);
check(
  isUrl(chart.home) && Array.isArray(chart.sources) && chart.sources.every(isUrl),
  'Chart.yaml: home and sources must be URLs',
);
check(
  chart.maintainers?.length > 0 && chart.maintainers.every((m) => m.name),
  'Chart.yaml: maintainers must name someone',
);
check(chart.keywords?.length > 0, 'Chart.yaml: no keywords');
const source = chart.sources?.[0];
const imageSource = /^ARG SOURCE_URL=(\S+)$/m.exec(dockerfile)?.[1];
check(
  imageSource === source,
  `deploy/docker/Dockerfile ARG SOURCE_URL=${imageSource}, Chart.yaml sources[0] ${source}`,
);
yamlList(
  'artifacthub.io/links',
  (l) => !l?.url?.includes('/blob/') || l.url.startsWith(`${source}/`),
); // files of that repository
if (/\bexample\.(com|org|net)\b|\.example\b/.test(source ?? '')) {
  warnings.push(
    `the source repository is still the placeholder ${source} (Chart.yaml home, sources, links; Dockerfile SOURCE_URL)`,
  );
}

// ---- 5. changesets
{
  const config = JSON.parse(read('.changeset', 'config.json'));
  check(
    config.fixed?.some((group) => group.includes('@po/*')),
    '.changeset/config.json: the @po/* packages are not one fixed group',
  );
  check(
    config.privatePackages?.version === true,
    '.changeset/config.json: privatePackages.version must be true (every package is private)',
  );
  const names = new Set(manifests.slice(1).map(([, pkg]) => pkg.name));
  for (const file of readdirSync(join(ROOT, '.changeset')).filter(
    (f) => f.endsWith('.md') && f !== 'README.md',
  )) {
    const match = /^---\r?\n([\s\S]*?)\r?\n?---\r?\n([\s\S]*)$/.exec(read('.changeset', file));
    const releases = match ? (parse(match[1]) ?? {}) : null;
    check(
      releases &&
        Object.entries(releases).every(([name, bump]) => names.has(name) && BUMPS.includes(bump)),
      `.changeset/${file}: front matter must map package names to major, minor, patch or none`,
    );
    check(match && match[2].trim().length > 0, `.changeset/${file}: no summary`);
  }
}

for (const w of warnings) console.log(`  WARNING: ${w}`);
if (problems.length) {
  console.error(`release checks FAILED (${problems.length}):\n  - ${problems.join('\n  - ')}`);
  process.exit(1);
}
console.log(
  `release checks: OK (chart README up to date with values.yaml, LICENSE Apache-2.0 in ${manifests.length} package.json files, version ${version} in packages, chart, image and CHANGELOG, Artifact Hub annotations, changesets)`,
);
