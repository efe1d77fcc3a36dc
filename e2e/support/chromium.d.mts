// Types of chromium.mjs for the TypeScript end-to-end tests.
import type { Browser } from 'playwright-core';

export const CHROMIUM_PATH: string;
export const CHROMIUM_FLAGS: string[];
export function launchChromium(): Promise<Browser>;
