// Debian's Chromium driven by playwright-core, shared by the browser tests (browser.ts) and the
// dashboard render bench (e2e/bench/dashboard.mjs). deploy/local/ensure-chromium.sh installs it;
// the explicit executable path means no browser is ever downloaded.
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * This machine's network is closed: without these, Chromium keeps opening connections to
 * Google's hosts (component updates, safe browsing, sync) that are refused many at a time.
 * Playwright adds --no-sandbox itself (needed as root) and gives every launch a fresh, empty
 * profile directory (the --user-data-dir it passes), removed on close.
 */
export const CHROMIUM_FLAGS = [
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-features=Translate,MediaRouter,OptimizationHints',
];

/** Headless Chromium; a clear error when it is not installed. */
export async function launchChromium() {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`${CHROMIUM_PATH} is missing: run \`bash deploy/local/ensure-chromium.sh\` (Debian's chromium package)`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_FLAGS });
}
