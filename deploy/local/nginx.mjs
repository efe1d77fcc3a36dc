import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
// A local nginx in front of the services: one base URL for the whole API, routed like the Helm
// chart's Ingress (helm/pipeline-orchestration/templates/ingress.yaml) with the chart's sticky
// rule for the worker-gateway replicas (workerRouting in values.yaml). Used by the multi-replica
// e2e test and, optionally, by `npm run up` when nginx is installed (deploy/README.md).
//   startNginxFront({ apiUrl, workerUrls, port, hashOn }) -> { url, stop() }
// Builtins only, like stack.mjs. nginx runs as a foreground child with its own prefix directory
// (config, pid, logs, temp files) and listens on 127.0.0.1 only.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
  chmodSync,
  unlinkSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

// Not imported from stack.mjs: stack.mjs loads this module while it is still evaluating.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CHART_VALUES = join(ROOT, 'helm', 'pipeline-orchestration', 'values.yaml');

/** Paths the chart's Ingress sends to the worker-gateway (ingress-nginx regex locations); the rest go to the api-gateway. */
export const WORKER_LOCATIONS = [
  '^/workers/(bootstrap|heartbeat|events|shutdown)$',
  '^/jobs/',
  '^/stages/[^/]+/lease/',
  '^/stages/[^/]+/result$',
];

/**
 * Request bodies: the chart's Ingress annotations (templates/_helpers.tpl po.ingressBodyRule) in
 * nginx's own terms; deploy/k8s-checks checks that both say the same. No proxy limit and no
 * spooling: the services refuse an oversized body with a problem+json 413 that clients can read,
 * where nginx's own limit answers an HTML page.
 */
export const BODY_RULE = {
  'nginx.ingress.kubernetes.io/proxy-body-size': { directive: 'client_max_body_size', value: '0' },
  'nginx.ingress.kubernetes.io/proxy-request-buffering': { directive: 'proxy_request_buffering', value: 'off' },
};

/** The nginx binary on PATH or in /usr/sbin, or null. */
export function findNginx() {
  const dirs = [
    ...(process.env.PATH ?? '').split(delimiter),
    '/usr/sbin',
    '/usr/local/sbin',
  ].filter(Boolean);
  return dirs.map((dir) => join(dir, 'nginx')).find((file) => existsSync(file)) ?? null;
}

/**
 * nginx, installed from Debian's packages when it is missing and we are root with apt-get
 * (services are kept from starting at install). Returns its path, or null and the reason.
 */
export function ensureNginx({ install = true, log = () => {} } = {}) {
  const found = findNginx();
  if (found) return { nginx: found, reason: null };
  if (!install) return { nginx: null, reason: 'nginx is not installed' };
  if (process.getuid?.() !== 0)
    return {
      nginx: null,
      reason: 'nginx is not installed and we are not root (run: sudo apt-get install -y nginx)',
    };
  if (!existsSync('/usr/bin/apt-get'))
    return { nginx: null, reason: 'nginx is not installed and there is no apt-get' };
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !existsSync(policy); // keep the package's init script from starting nginx on :80
  if (ownPolicy) {
    writeFileSync(policy, '#!/bin/sh\nexit 101\n');
    chmodSync(policy, 0o755);
  }
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const apt = (args) => spawnSync('apt-get', args, { env, encoding: 'utf8', timeout: 180_000 });
    log('nginx: apt-get install -y --no-install-recommends nginx');
    let res = apt(['install', '-y', '--no-install-recommends', 'nginx']);
    if (res.status !== 0) {
      log('nginx: apt-get update, then install again');
      apt(['update']);
      res = apt(['install', '-y', '--no-install-recommends', 'nginx']);
    }
    if (res.status !== 0)
      return {
        nginx: null,
        reason: `apt-get install nginx failed: ${(res.stderr || res.stdout).trim().split('\n').slice(-3).join(' / ')}`,
      };
  } finally {
    if (ownPolicy) unlinkSync(policy);
  }
  const nginx = findNginx();
  return nginx
    ? { nginx, reason: null }
    : { nginx: null, reason: 'apt-get installed nginx but no nginx binary was found' };
}

/**
 * The chart's default sticky rule, read from values.yaml without a YAML library (stack.mjs has no
 * dependencies): the `sticky` and `hashBy` keys of `workerRouting`. `hashOn` is null unless the
 * mode is header-hash.
 */
export function chartStickyRule(valuesFile = CHART_VALUES) {
  const lines = readFileSync(valuesFile, 'utf8').split('\n');
  const start = lines.findIndex((l) => /^workerRouting:\s*(#.*)?$/.test(l));
  if (start < 0) throw new Error(`${valuesFile}: no workerRouting`);
  const block = {};
  for (const line of lines.slice(start + 1)) {
    if (/^\S/.test(line)) break; // next top-level key
    const m = /^ {2}(sticky|hashBy):\s*("?)([^"#\s]*)\2\s*(#.*)?$/.exec(line);
    if (m) block[m[1]] = m[3];
  }
  if (!block.sticky || !block.hashBy)
    throw new Error(`${valuesFile}: workerRouting lacks sticky or hashBy`);
  return {
    sticky: block.sticky,
    hashBy: block.hashBy,
    hashOn: block.sticky === 'header-hash' ? block.hashBy : null,
  };
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => socket.end(() => resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

const hostPort = (url) => new URL(url).host;

/** The nginx.conf of the front: the chart's routing table and its sticky rule. */
export function nginxConfig({
  apiUrls,
  workerUrls,
  port,
  hashOn,
  prefix,
}) {
  if (hashOn != null && !/^\$[a-z0-9_]+$/.test(hashOn))
    throw new Error(
      `hashOn must be an nginx variable such as $http_x_worker_session, got ${hashOn}`,
    );
  const servers = (urls) =>
    urls.map((u) => `    server ${hostPort(u)} max_fails=1 fail_timeout=5s;`).join('\n');
  const proxy = (upstream) =>
    [
      `      proxy_pass http://${upstream};`,
      '      proxy_http_version 1.1;',
      '      proxy_set_header Connection "";',
      '      proxy_set_header Host $host;',
      '      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
      '      proxy_read_timeout 60s;',
    ].join('\n');
  return `# Written by deploy/local/nginx.mjs. Routes like helm/pipeline-orchestration/templates/ingress.yaml.
worker_processes 1;
pid ${prefix}/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
  access_log ${prefix}/access.log combined;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
${Object.values(BODY_RULE)
  .map(({ directive, value }) => `  ${directive} ${value};`)
  .join('\n')}
  upstream api_gateway {
${servers(apiUrls)}
    keepalive 16;
  }
  upstream worker_gateway {
${hashOn ? `    # the chart's sticky rule (values.yaml workerRouting.hashBy)\n    hash ${hashOn} consistent;\n` : '    # no sticky rule: round robin\n'}${servers(workerUrls)}
    keepalive 16;
  }
  server {
    listen 127.0.0.1:${port};
    # Which upstream served the request: lets tests and people see the routing.
    add_header X-Upstream-Addr $upstream_addr always;
${WORKER_LOCATIONS.map((re) => `    location ~* "${re}" {\n${proxy('worker_gateway')}\n    }`).join('\n')}
    location / {
${proxy('api_gateway')}
    }
  }
}
`;
}

/**
 * Starts nginx in front of the api-gateway (apiUrl, or apiUrls) and the worker-gateway replicas
 * (workerUrls). hashOn: an nginx variable to hash worker requests on (the chart's
 * workerRouting.hashBy, e.g. $http_x_worker_session), or null for round robin.
 */
export async function startNginxFront({
  apiUrl,
  apiUrls = apiUrl ? [apiUrl] : [],
  workerUrls,
  port,
  hashOn = null,
  nginx = findNginx(),
  log = () => {},
}) {
  if (!nginx) throw new Error('nginx is not installed (apt-get install -y nginx)');
  if (!apiUrls.length || !workerUrls?.length)
    throw new Error('startNginxFront needs apiUrl(s) and workerUrls');
  const listen = port || (await freePort());
  const prefix = mkdtempSync(join(tmpdir(), 'po-nginx-'));
  chmodSync(prefix, 0o755); // nginx's workers may run as nobody when we are root
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(conf, nginxConfig({ apiUrls, workerUrls, port: listen, hashOn, prefix }));
  execFileSync(nginx, ['-t', '-q', '-e', 'stderr', '-p', prefix, '-c', conf], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const child = spawn(nginx, ['-e', 'stderr', '-p', prefix, '-c', conf, '-g', 'daemon off;'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = [];
  for (const stream of [child.stdout, child.stderr])
    stream.on('data', (d) => output.push(String(d)));
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let gone = false;
  exited.then(() => (gone = true));
  const until = Date.now() + 10_000;
  while (!(await accepts(listen))) {
    if (gone || Date.now() > until) {
      child.kill('SIGKILL');
      rmSync(prefix, { recursive: true, force: true });
      throw new Error(`nginx did not start on 127.0.0.1:${listen}: ${output.join('').trim()}`);
    }
    await sleep(50);
  }
  log(
    `nginx: http://127.0.0.1:${listen} -> api ${apiUrls.join(', ')}; workers ${workerUrls.join(', ')} (${hashOn ? `hash ${hashOn} consistent` : 'round robin'})`,
  );
  let stopping = null;
  return {
    url: `http://127.0.0.1:${listen}`,
    port: listen,
    prefix,
    config: readFileSync(conf, 'utf8'),
    /** Graceful stop (SIGQUIT), SIGKILL after 5 s; removes the prefix directory. */
    stop() {
      stopping ??= (async () => {
        if (!gone) child.kill('SIGQUIT');
        const late = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(late);
        rmSync(prefix, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}
