#!/usr/bin/env node
// Lints deploy/docker/Dockerfile without a Docker engine: dockerfile-utils (the Dockerfile language
// server's validator: syntax, instruction arguments, flags) plus this project's image rules
// (docs/decisions/0012-one-container-image.md). Then proves the rules bite, on mutated copies.
//   node deploy/docker/lint.mjs          exit 1 when any rule fails
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validate } from 'dockerfile-utils';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const DOCKERFILE = join(HERE, 'Dockerfile');
const IGNORE = join(HERE, 'Dockerfile.dockerignore');
const SECRET_NAME = /PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE|CREDENTIAL|DATABASE_URL|REDIS_URL/i;

/** Instructions with continuation lines joined and comments dropped: { keyword, args, line }. */
function parse(text) {
  const out = [];
  let buffer = null;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (buffer === null && (line === '' || line.startsWith('#'))) return;
    if (buffer !== null && line.startsWith('#')) return; // comment inside a continued instruction
    const part = line.endsWith('\\') ? line.slice(0, -1) : line;
    if (buffer === null) buffer = { text: part, line: i + 1 };
    else buffer.text += ` ${part}`;
    if (!line.endsWith('\\')) {
      const [keyword, ...rest] = buffer.text.trim().split(/\s+/);
      out.push({ keyword: keyword.toUpperCase(), args: rest.join(' '), line: buffer.line });
      buffer = null;
    }
  });
  return out;
}

/** Workspace folders named by the root package.json (globs of the form dir/*). */
function workspaces() {
  const globs = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).workspaces;
  return globs.flatMap((glob) =>
    glob.endsWith('/*')
      ? readdirSync(join(ROOT, glob.slice(0, -2)), { withFileTypes: true })
          .filter((d) => d.isDirectory() && existsSync(join(ROOT, glob.slice(0, -2), d.name, 'package.json')))
          .map((d) => `${glob.slice(0, -2)}/${d.name}`)
      : [glob],
  );
}

/** `KEY=value KEY2="value 2"` pairs of a LABEL or ENV instruction (the `KEY value` form is not used here). */
function pairs(args) {
  return Object.fromEntries([...args.matchAll(/([\w.-]+)=("(?:[^"\\]|\\.)*"|\S*)/g)].map(([, k, v]) => [k, v.replace(/^"(.*)"$/, '$1')]));
}

/** The Node version CI's second test pass runs on, pinned by deploy/local/ensure-node24.sh. */
const TESTED_NODE = /^VERSION='(\d+\.\d+\.\d+)'$/m.exec(readFileSync(join(ROOT, 'deploy', 'local', 'ensure-node24.sh'), 'utf8'))?.[1] ?? 'unknown';
const ENGINES = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines?.node ?? '';

/**
 * Whether an `engines` range admits a version. Only the forms used here: alternatives joined by
 * `||`, each `>=a.b[.c]` or `^a.b[.c]`; anything else admits nothing (and so fails the rule).
 */
function admits(range, version) {
  const num = (v) => v.split('.').map(Number).concat(0, 0).slice(0, 3);
  const cmp = (a, b) => a.reduce((d, x, i) => d || x - b[i], 0);
  const v = num(version);
  return range.split('||').some((alt) => {
    const m = /^\s*(>=|\^)(\d+(?:\.\d+){0,2})\s*$/.exec(alt);
    if (!m) return false;
    const low = num(m[2]);
    return cmp(v, low) >= 0 && (m[1] === '>=' || v[0] === low[0]);
  });
}

/** OCI annotations the image carries (https://github.com/opencontainers/image-spec/blob/main/annotations.md). */
const OCI_LABELS = ['title', 'description', 'version', 'revision', 'created', 'source', 'licenses'].map((k) => `org.opencontainers.image.${k}`);

/** Every broken rule, as a message. */
export function check(dockerfile, dockerignore, entrypoint) {
  const problems = [];
  const fail = (msg) => problems.push(msg);

  for (const d of validate(dockerfile)) {
    if (d.severity === 1 || d.severity === 2) fail(`dockerfile-utils line ${d.range.start.line + 1}: ${d.message}`);
  }

  const all = parse(dockerfile);
  const stages = [];
  for (const ins of all) {
    if (ins.keyword === 'FROM') stages.push({ from: ins, name: /\bAS\s+(\S+)/i.exec(ins.args)?.[1], body: [] });
    else stages.at(-1)?.body.push(ins);
  }
  if (stages.length < 2) fail('multi-stage: expected a build stage and a runtime stage');
  const runtime = stages.at(-1);
  const builders = stages.slice(0, -1);
  const runs = (list) => list.filter((i) => i.keyword === 'RUN').map((i) => i.args);

  // Small runtime: a slim (or distroless) Node base of the major CI tests on (the Node that
  // deploy/local/ensure-node24.sh pins, decision 0096), one that the root `engines` admits.
  const arg = all.find((i) => i.keyword === 'ARG' && i.args.startsWith('NODE_IMAGE='));
  const base = runtime?.from.args.split(/\s+/)[0].replace('${NODE_IMAGE}', arg?.args.slice('NODE_IMAGE='.length) ?? '');
  const major = TESTED_NODE.split('.')[0];
  if (!new RegExp(`^(node:${major}[\\w.-]*-slim|gcr\\.io/distroless/nodejs${major})`).test(base ?? '')) fail(`runtime base "${base}" is not a slim Node ${major} image (the Node CI tests on)`);
  if (!admits(ENGINES, TESTED_NODE)) fail(`package.json engines "${ENGINES}" does not admit Node ${TESTED_NODE}, the image's runtime`);

  // Non-root: the runtime stage ends as a numeric, non-zero user before its entry point.
  const users = runtime?.body.filter((i) => i.keyword === 'USER') ?? [];
  const user = users.at(-1)?.args.split(':')[0];
  if (!user) fail('runtime stage has no USER (it would run as root)');
  else if (!/^\d+$/.test(user) || user === '0') fail(`runtime USER "${user}" must be a non-zero uid (runAsNonRoot can check only numbers)`);
  const entry = runtime?.body.find((i) => i.keyword === 'ENTRYPOINT');
  if (!entry?.args.startsWith('[')) fail('ENTRYPOINT must use the exec (JSON) form, so SIGTERM reaches node');
  if (users.length && entry && users.at(-1).line > entry.line) fail('USER must come before ENTRYPOINT');

  // Dependencies: the build installs, then only production dependencies reach the runtime stage.
  const buildRuns = runs(builders.flatMap((s) => s.body));
  const install = buildRuns.findIndex((r) => /\bnpm (install|ci)\b(?!.*--global)/.test(r));
  if (install < 0) fail('no npm install/ci in a build stage');
  if (!buildRuns.some((r) => /\bnpm (prune|ci|install)\b[^&;]*--omit=dev/.test(r))) fail('no `npm prune --omit=dev` (or `npm ci --omit=dev`) before the runtime copy');
  if (runs(runtime?.body ?? []).some((r) => /\bnpm (install|ci)\b/.test(r) && !r.includes('--omit=dev'))) fail('runtime stage installs dev dependencies');

  // Prisma client generated at build time, after the sources are in and before compiling.
  const gen = buildRuns.findIndex((r) => /generate --workspace @po\/db|prisma generate/.test(r));
  const compile = buildRuns.findIndex((r) => /turbo run build|npm run build/.test(r));
  if (gen < 0) fail('the Prisma client is not generated in a build stage');
  else if (compile >= 0 && gen > compile) fail('Prisma generation must run before the build');

  // Every workspace manifest is copied before the install (else npm silently skips the workspace).
  const installLine = builders.flatMap((s) => s.body).filter((i) => i.keyword === 'RUN')[install]?.line ?? 0;
  const copied = all.filter((i) => i.keyword === 'COPY' && i.line < installLine).map((i) => i.args);
  for (const ws of workspaces()) {
    if (!copied.some((c) => c.split(/\s+/).includes(`${ws}/package.json`))) fail(`${ws}/package.json is not copied before the install`);
  }

  // No secrets baked in: no secret-looking ENV/ARG, no credentials in URLs, no secret files copied.
  for (const ins of all) {
    if ((ins.keyword === 'ENV' || ins.keyword === 'ARG') && SECRET_NAME.test(ins.args)) fail(`line ${ins.line}: ${ins.keyword} ${ins.args} looks like a secret`);
    if (/:\/\/[^/\s:@]+:[^/\s@]+@/.test(ins.args)) fail(`line ${ins.line}: URL with credentials`);
    if (['COPY', 'ADD'].includes(ins.keyword) && /(^|\s|\/)(\.env\S*|\.npmrc|\S+\.pem|\S+\.key)(\s|$)/.test(ins.args)) fail(`line ${ins.line}: copies a secret file`);
  }
  for (const pattern of ['**/node_modules', '.git', '**/.env', '**/.npmrc', '**/dist']) {
    if (!dockerignore.split('\n').map((l) => l.trim()).includes(pattern)) fail(`Dockerfile.dockerignore lacks ${pattern}`);
  }

  // Build metadata: GIT_COMMIT and BUILT_AT come in as build args of the runtime stage and stay as
  // env (GET /version shows them); the OCI labels name version, revision, time, source and licence.
  const runtimeArgs = new Set((runtime?.body ?? []).filter((i) => i.keyword === 'ARG').map((i) => i.args.split('=')[0]));
  const env = Object.assign({}, ...(runtime?.body ?? []).filter((i) => i.keyword === 'ENV').map((i) => pairs(i.args)));
  for (const name of ['GIT_COMMIT', 'BUILT_AT']) {
    if (!runtimeArgs.has(name)) fail(`runtime stage has no ARG ${name}`);
    if (env[name] !== `\${${name}}`) fail(`runtime stage does not set ENV ${name}=\${${name}} (GET /version reads it)`);
  }
  const labels = Object.assign({}, ...(runtime?.body ?? []).filter((i) => i.keyword === 'LABEL').map((i) => pairs(i.args)));
  for (const key of OCI_LABELS) if (!labels[key]) fail(`runtime stage lacks LABEL ${key}`);
  if (labels['org.opencontainers.image.revision'] !== '${GIT_COMMIT}') fail('LABEL org.opencontainers.image.revision is not ${GIT_COMMIT}');
  if (labels['org.opencontainers.image.created'] !== '${BUILT_AT}') fail('LABEL org.opencontainers.image.created is not ${BUILT_AT}');
  const license = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).license;
  if (labels['org.opencontainers.image.licenses'] !== license) fail(`LABEL org.opencontainers.image.licenses is not the package licence ${license}`);

  // The entry point knows every service.
  for (const ws of workspaces().filter((w) => w.startsWith('services/'))) {
    if (!entrypoint.includes(`'${ws}/dist/main.js'`)) fail(`entrypoint.mjs cannot run ${ws}`);
  }
  return problems;
}

const dockerfile = readFileSync(DOCKERFILE, 'utf8');
const dockerignore = readFileSync(IGNORE, 'utf8');
const entrypoint = readFileSync(join(HERE, 'entrypoint.mjs'), 'utf8');
const problems = check(dockerfile, dockerignore, entrypoint);

// The rules must be able to fail: each mutation breaks one of them.
const mutations = {
  'USER removed': dockerfile.replace(/^USER .*$/m, ''),
  'runs as root': dockerfile.replace(/^USER .*$/m, 'USER 0:0'),
  'secret ENV': dockerfile.replace(/^WORKDIR \/app$/m, 'WORKDIR /app\nENV DATABASE_URL=postgresql://po:hunter2@db/po'),
  'no --omit=dev': dockerfile.replaceAll('--omit=dev', ''),
  'no prisma generate': dockerfile.replace('npm run generate --workspace @po/db', 'true'),
  'single stage': dockerfile.replace(/^FROM \$\{NODE_IMAGE\} AS runtime$[\s\S]*/m, ''),
  'workspace manifest missing': dockerfile.replace(/^COPY libs\/queues\/package\.json.*$/m, ''),
  'commit not stamped': dockerfile.replace('ENV GIT_COMMIT=${GIT_COMMIT}', 'ENV GIT_COMMIT=unknown'),
  'no OCI labels': dockerfile.replace(/^LABEL /m, 'ENV '),
  'end-of-life Node base': dockerfile.replace(/^ARG NODE_IMAGE=node:\d+/m, 'ARG NODE_IMAGE=node:20'),
};
for (const [name, mutated] of Object.entries(mutations)) {
  if (mutated === dockerfile) problems.push(`self-test "${name}": the mutation did not apply`);
  else if (check(mutated, dockerignore, entrypoint).length === 0) problems.push(`self-test "${name}": the rules did not catch it`);
}

if (problems.length) {
  console.error(`docker lint: ${problems.length} problem(s) in deploy/docker/Dockerfile:\n  - ${problems.join('\n  - ')}`);
  process.exit(1);
}
console.log(`docker lint: deploy/docker/Dockerfile OK (dockerfile-utils, image rules, ${Object.keys(mutations).length} mutations caught)`);
