import { readFile, stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import type { Middleware } from 'koa';
import type { DashboardConfig } from '@po/contracts';
import { NotFound } from '@po/domain';
import { bodyEtag, matchesIfNoneMatch, sendJson, type AppState } from '@po/http';

/**
 * The dashboard's Content-Security-Policy (decision 0093): everything from this origin, no inline
 * script, no framing; inline styles are allowed because the component library sets style
 * attributes at run time.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

/** Hashed build output: a new build has new names, so a browser may keep these for good. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

export interface DashboardStaticOptions {
  /** libs/dashboard/dist, or null when @po/dashboard cannot be found. */
  distDir: string | null;
  config: DashboardConfig;
}

class DashboardNotBuilt extends NotFound {
  constructor() {
    super('The dashboard was not built: run `npm run build -w @po/dashboard` (libs/dashboard/dist is missing).');
  }
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then((s) => s.isFile(), () => false);
}

/** The file under `root` that `relative` (URL-decoded) names, or null when it would leave `root`. */
function within(root: string, relative: string): string | null {
  if (relative.includes('\0')) return null;
  const path = resolve(root, `.${sep}${relative}`);
  return path === root || path.startsWith(root + sep) ? path : null;
}

/**
 * GET /ui/…: the dashboard's files from its build (no API key: they hold no data), read from disk
 * per request so a rebuild needs no restart. `/ui`, `/ui/` and every unknown path without a file
 * extension answer index.html (the client-side routes); a missing file with an extension is a 404.
 * GET /ui/config.json is what the dashboard needs of this gateway's configuration. Every answer
 * carries the CSP, nosniff and no-referrer; index.html is `no-cache` (revalidated by its ETag),
 * /ui/assets/* immutable. Without a build, every path is a 404 problem saying so.
 */
export function dashboardStatic({ distDir, config }: DashboardStaticOptions): Middleware<AppState> {
  const root = distDir === null ? null : resolve(distDir);
  return async (ctx, next) => {
    if (ctx.path !== '/ui' && !ctx.path.startsWith('/ui/')) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    ctx.set('Content-Security-Policy', DASHBOARD_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    if (ctx.path === '/ui/config.json') {
      sendJson(ctx, 200, config);
      return;
    }
    const index = root === null ? null : resolve(root, 'index.html');
    if (root === null || index === null || !(await isFile(index))) throw new DashboardNotBuilt();
    let relative: string;
    try {
      relative = decodeURIComponent(ctx.path.slice('/ui/'.length));
    } catch {
      throw new NotFound('No such file.');
    }
    let file = relative === '' || ctx.path === '/ui' ? index : within(root, relative);
    if (file === null) throw new NotFound('No such file.');
    if (file !== index && !(await isFile(file))) {
      // A client-side route (no extension) is the app's to resolve; a missing asset is missing.
      if (extname(relative) !== '') throw new NotFound('No such file.');
      file = index;
    }
    const body = await readFile(file);
    const etag = bodyEtag(body);
    ctx.set('Cache-Control', relative.startsWith('assets/') && file !== index ? IMMUTABLE : 'no-cache');
    ctx.set('ETag', etag);
    ctx.type = extname(file) || '.html';
    const ifNoneMatch = ctx.get('If-None-Match');
    if (ifNoneMatch !== '' && matchesIfNoneMatch(ifNoneMatch, etag)) {
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    ctx.body = body;
  };
}
