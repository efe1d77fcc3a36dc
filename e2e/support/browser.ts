import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ROOT } from '../../deploy/local/stack.mjs';
import { launchChromium } from './chromium.mjs';

/** Where the browser tests leave their screenshots (test artifacts; .local is git-ignored). */
export const ARTIFACTS_DIR = join(ROOT, '.local', 'artifacts', 'dashboard');

export interface BrowserSession {
  browser: Browser;
  /** A new isolated context (its own sessionStorage) and page, with errors recorded. */
  newPage(options?: { viewport?: { width: number; height: number } }): Promise<Page>;
  /** Uncaught page errors and console errors (CSP refusals among them) seen so far. */
  errors: string[];
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<BrowserSession> {
  const browser = await launchChromium();
  const contexts: BrowserContext[] = [];
  const errors: string[] = [];
  return {
    browser,
    errors,
    async newPage(options = {}) {
      const context = await browser.newContext({ viewport: options.viewport ?? { width: 1400, height: 900 } });
      contexts.push(context);
      const page = await context.newPage();
      page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
      page.on('console', (msg) => {
        if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
      });
      return page;
    },
    async close() {
      await Promise.all(contexts.map((c) => c.close().catch(() => undefined)));
      await browser.close();
    },
  };
}

let axeSource: string | undefined;

type AnimatedDocument = { document: { getAnimations(): { playState: string }[] } };

/**
 * Waits (up to 3 s) until no CSS transition or animation runs: a dialog fading in has its text
 * at partial opacity, which axe would report as low contrast.
 */
async function settled(page: Page): Promise<void> {
  const until = Date.now() + 3000;
  while (Date.now() < until) {
    const running = await page.evaluate(() =>
      (globalThis as unknown as AnimatedDocument).document.getAnimations().filter((a) => a.playState === 'running').length,
    );
    if (running === 0) return;
    await page.waitForTimeout(50);
  }
}

export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  targets: string[];
}

/**
 * axe-core's serious and critical violations on the page as it is now. The script is evaluated
 * through the DevTools protocol, not added as a <script>: the dashboard's CSP (script-src 'self')
 * rightly refuses inline scripts, and the check must run under that CSP.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await settled(page);
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const loaded = await page.evaluate('typeof window.axe === "object"');
  if (!loaded) await page.evaluate(axeSource);
  const violations = await page.evaluate<AxeViolation[]>(`(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
    }));
  })()`);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** A full-page screenshot at .local/artifacts/dashboard/<name>.png; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const path = join(ARTIFACTS_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
