// The console's browser tests: Debian's Chromium driven by Playwright's library API, against a real control plane.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type Page } from 'playwright';
import type { Test } from 'tap';
import { ensureConsoleBuilt } from '../../control-plane/src/console/console-build.ts';

/** Installed by .ci/run (apt-get install chromium); Playwright's own browser download cannot work here. */
export const CHROMIUM = '/usr/bin/chromium';
/** Every page's screenshot, by name, written by each run (CI keeps them as files). */
export const SCREENSHOT_DIR = join(import.meta.dirname, '../../.tap/console-screenshots');

export interface ConsoleBrowser {
  page: Page;
  /** Every address the page requested, in order. */
  requests: string[];
  /** Console errors and uncaught exceptions of the page (a CSP refusal shows here), failed loads left out. */
  errors: string[];
}

/** Builds the console if its sources changed, then opens one page in a fresh headless Chromium. */
export async function openConsoleBrowser(t: Test): Promise<ConsoleBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
  await ensureConsoleBuilt({ info: () => undefined, warn: (object, message) => t.comment(message) });
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  // axe-core needs a page of an explicit context.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => {
    // An API answer of 401 or 404 is the page's business (signed out, a wrong key), not an error of the page.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  return { page, requests, errors };
}

/** axe-core over the whole page: the serious and critical violations, as "rule: target" lines (none expected). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page })
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'])
    .analyze();
  return result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .flatMap((violation) => violation.nodes.map((node) => `${violation.id}: ${node.target.join(' ')}`));
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The addresses requested that are not the appliance's own origin. */
export function foreignRequests(requests: string[], origin: string): string[] {
  return requests.filter((url) => new URL(url).origin !== origin);
}

/**
 * Reads until the reading is accepted or the time is up, and returns the last reading: a page renders after the
 * answer it waits for, so an assertion on what it shows must let it settle (the assertion then says what was seen).
 */
export async function settled<T>(
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Signs the page in with an API key on the sign-in page and waits for the key's workspace's datasets page. */
export async function signInWithKey(page: Page, origin: string, key: string, owner: string): Promise<void> {
  await page.goto(`${origin}/signin`);
  await page.getByLabel('API key (kept in this tab only)').fill(key);
  await page.getByRole('button', { name: 'Sign in with the key' }).click();
  await page.waitForURL(`${origin}/${owner}/datasets`);
}
