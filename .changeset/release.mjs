#!/usr/bin/env node
// `npm run release:version`: turns the pending changesets into a release (.changeset/README.md,
// decision 0091). Changesets versions the workspaces (one fixed group) but writes changelogs per
// package only; the product has one CHANGELOG.md at the root, so this script reads the changesets
// first, lets `changeset version` bump every package and delete them, then writes the root
// section and carries the version to package.json, Chart.yaml and the Dockerfile.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const at = (...parts) => join(ROOT, ...parts);
const CHART = at('helm', 'pipeline-orchestration', 'Chart.yaml');
const DOCKERFILE = at('deploy', 'docker', 'Dockerfile');
const BUMPS = ['major', 'minor', 'patch'];
const HEADINGS = { major: 'Major changes', minor: 'Minor changes', patch: 'Patch changes' };
const ARTIFACT_HUB_KIND = { major: 'changed', minor: 'added', patch: 'fixed' };

/** Pending changesets as { type: the largest bump one asks for, summary }; `none`-only ones are dropped. */
function pendingChangesets() {
  const files = readdirSync(at('.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md');
  return files.sort().flatMap((file) => {
    const match = /^---\r?\n([\s\S]*?)\r?\n?---\r?\n([\s\S]*)$/.exec(
      readFileSync(at('.changeset', file), 'utf8'),
    );
    if (!match) throw new Error(`.changeset/${file} has no front matter: is it a changeset?`);
    const asked = Object.values(parse(match[1]) ?? {});
    const type = BUMPS.find((bump) => asked.includes(bump));
    return type ? [{ type, summary: match[2].trim() }] : [];
  });
}

const bump = (version, type) => {
  const [major, minor, patch] = version.split('.').map(Number);
  return type === 'major'
    ? `${major + 1}.0.0`
    : type === 'minor'
      ? `${major}.${minor + 1}.0`
      : `${major}.${minor}.${patch + 1}`;
};
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
function edit(file, pattern, replacement) {
  const text = readFileSync(file, 'utf8');
  if (!pattern.test(text)) throw new Error(`${file}: ${pattern} not found`);
  writeFileSync(file, text.replace(pattern, replacement));
}

const changes = pendingChangesets();
if (changes.length === 0) {
  console.error('release: no changeset pending (`npx changeset` adds one)');
  process.exit(1);
}
const type = BUMPS.find((b) => changes.some((c) => c.type === b));
const previous = readJson(at('package.json')).version;

execFileSync('npx', ['changeset', 'version'], { cwd: ROOT, stdio: 'inherit' });

// The fixed group moved together; the root follows it.
const version = readJson(at('libs', 'contracts', 'package.json')).version;
if (version === previous) throw new Error(`changeset version left the packages at ${previous}`);
edit(at('package.json'), /"version": "[^"]+"/, `"version": "${version}"`);
edit(DOCKERFILE, /^ARG VERSION=.*$/m, `ARG VERSION=${version}`);

// Chart.yaml: appVersion, the chart's own version bumped alike, and Artifact Hub's change list.
const chart = parse(readFileSync(CHART, 'utf8'));
const hub = changes
  .map(
    (c) =>
      `    - kind: ${ARTIFACT_HUB_KIND[c.type]}\n      description: ${JSON.stringify(c.summary.split('\n')[0])}`,
  )
  .join('\n');
edit(CHART, /^version: .*$/m, `version: ${bump(chart.version, type)}`);
edit(CHART, /^appVersion: .*$/m, `appVersion: "${version}"`);
edit(
  CHART,
  /^ {2}artifacthub\.io\/changes: \|\n(?: {4}.*\n)+/m,
  `  artifacthub.io/changes: |\n${hub}\n`,
);

// CHANGELOG.md: the new section above the previous ones.
const date = new Date().toISOString().slice(0, 10);
const sections = BUMPS.filter((b) => changes.some((c) => c.type === b)).map(
  (b) =>
    `### ${HEADINGS[b]}\n\n${changes
      .filter((c) => c.type === b)
      .map((c) => `- ${c.summary.replace(/\n/g, '\n  ')}`)
      .join('\n')}\n`,
);
edit(at('CHANGELOG.md'), /^## /m, `## ${version} (${date})\n\n${sections.join('\n')}\n## `);

console.log(
  `release: ${previous} -> ${version} (${type}). Next: npm install (package-lock.json), review, commit, tag v${version}.`,
);
