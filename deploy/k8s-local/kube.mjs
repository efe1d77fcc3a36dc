// A small Kubernetes API client for the local control plane (deploy/k8s-local/up.sh): requests and
// watches over HTTPS with the admin client certificate up.sh made. No dependency: the fake node
// and the real-cluster test only need GET/POST/PATCH/DELETE and watch streams.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';

/** @typedef {{ type: string, object: any }} WatchEvent */

export class KubeError extends Error {
  constructor(method, path, status, body) {
    super(
      `${method} ${path}: HTTP ${status} ${typeof body === 'object' ? (body?.message ?? JSON.stringify(body)) : body}`,
    );
    this.status = status;
    this.body = body;
  }
}

/** Connects to the cluster described by `$workDir/cluster.json` (written by up.sh). */
export function connect(workDir) {
  const cluster = JSON.parse(readFileSync(join(workDir, 'cluster.json'), 'utf8'));
  const agent = new Agent({
    ca: readFileSync(cluster.ca),
    cert: readFileSync(cluster.cert),
    key: readFileSync(cluster.key),
    keepAlive: true,
    maxSockets: 8,
  });
  const url = new URL(cluster.server);

  function send(method, path, { body, contentType = 'application/json', timeoutMs = 30_000 } = {}) {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers: {
            accept: 'application/json',
            ...(payload === undefined
              ? {}
              : { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) }),
          },
          timeout: timeoutMs,
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json;
            try {
              json = text ? JSON.parse(text) : undefined;
            } catch {
              json = text;
            }
            resolve({ status: res.statusCode ?? 0, body: json });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** Sends and returns the body; throws a KubeError on anything but 2xx (or a status in `allow`). */
  async function call(method, path, options = {}) {
    const res = await send(method, path, options);
    if ((res.status >= 200 && res.status < 300) || options.allow?.includes(res.status))
      return res.body;
    throw new KubeError(method, path, res.status, res.body);
  }

  /**
   * Watches `path` (a list path; `watch=1` is added) from `resourceVersion`, calling `onEvent` for
   * each event in the order the API server sends them. Returns `stop()`; `done` settles when the
   * stream ends (the server closes watches after a while: callers that need more list again).
   */
  function watch(path, resourceVersion, onEvent) {
    const sep = path.includes('?') ? '&' : '?';
    const full = `${path}${sep}watch=1&allowWatchBookmarks=false${resourceVersion ? `&resourceVersion=${resourceVersion}` : ''}`;
    let req;
    let stopped = false;
    const done = new Promise((resolve, reject) => {
      req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method: 'GET',
          path: full,
          headers: { accept: 'application/json' },
        },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(new KubeError('WATCH', full, res.statusCode, ''));
            return;
          }
          let buffer = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => {
            buffer += chunk;
            let nl;
            while ((nl = buffer.indexOf('\n')) >= 0) {
              const line = buffer.slice(0, nl).trim();
              buffer = buffer.slice(nl + 1);
              if (line) onEvent(JSON.parse(line));
            }
          });
          res.on('end', resolve);
          res.on('error', (err) => (stopped ? resolve() : reject(err)));
        },
      );
      req.on('error', (err) => (stopped ? resolve() : reject(err)));
      req.end();
    });
    return {
      stop: () => {
        stopped = true;
        req.destroy();
      },
      done,
    };
  }

  return {
    server: cluster.server,
    get: (path, options) => call('GET', path, options),
    post: (path, body, options) => call('POST', path, { ...options, body }),
    put: (path, body, options) => call('PUT', path, { ...options, body }),
    mergePatch: (path, body, options) =>
      call('PATCH', path, { ...options, body, contentType: 'application/merge-patch+json' }),
    delete: (path, body, options) => call('DELETE', path, { ...options, body }),
    watch,
    close: () => agent.destroy(),
  };
}
