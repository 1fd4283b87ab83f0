// With the S3 store, thumbnails and images are presigned URLs of the store, another origin than the appliance's: the
// console's Content-Security-Policy allows exactly that origin for images (nothing else), and the gallery and the image
// view show them in a real browser.
import t from 'tap';
import { consoleCsp } from '../control-plane/src/console/console-assets.ts';
import { openConsoleBrowser, settled } from './helpers/console-browser.ts';
import { startS3Server } from './helpers/s3-server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

t.test('the policy without a store origin allows images from the appliance only', async (t) => {
  t.match(consoleCsp(), /img-src 'self' blob:;/);
  const withStore = consoleCsp('http://127.0.0.1:9000');
  t.match(withStore, /img-src 'self' blob: http:\/\/127\.0\.0\.1:9000;/, 'the store’s origin for images');
  t.match(withStore, /connect-src 'self';/, 'and for nothing else');
});

t.test('the console shows images stored in S3', async (t) => {
  const s3 = await startS3Server(t);
  const world = await startWorld(t, { STORAGE_URL: s3.storageUrl });
  const origin = world.server.url;
  const storeOrigin = new URL(s3.endpoint).origin;
  await createShapesDataset(t, world, world.alice, 'alice', 'buckets', { train: 6, val: 2 });

  const page = await fetch(`${origin}/alice/datasets/buckets`, { headers: { accept: 'text/html' } });
  t.match(page.headers.get('content-security-policy'), `img-src 'self' blob: ${storeOrigin};`);

  const browser = await openConsoleBrowser(t);
  await browser.page.goto(`${origin}/signin`);
  await browser.page.getByLabel('API key (kept in this tab only)').fill(world.alice);
  await browser.page.getByRole('button', { name: 'Sign in with the key' }).click();
  await browser.page.waitForURL(`${origin}/alice/datasets`);
  await browser.page.goto(`${origin}/alice/datasets/buckets`);
  await browser.page.getByRole('region', { name: 'Images' }).getByRole('status').getByText('8 images match').waitFor();
  const thumbnails = browser.page.getByRole('region', { name: 'Image grid' }).locator('img');
  await thumbnails.nth(7).waitFor();
  // The first row is in view (the others load lazily as they scroll in): each of its images loaded from the store.
  const firstRow = async () =>
    thumbnails.evaluateAll((images) =>
      images.slice(0, 4).map((image) => {
        const element = image as unknown as { complete: boolean; naturalWidth: number; src: string };
        return { width: element.complete ? element.naturalWidth : 0, src: element.src };
      }),
    );
  const loaded = await settled(firstRow, (row) => row.every((image) => image.width > 0));
  t.ok(
    loaded.every((image) => image.src.startsWith(storeOrigin)),
    'the thumbnails are the store’s presigned URLs',
  );
  t.ok(
    loaded.every((image) => image.width > 0),
    'and they loaded',
  );
  t.same(browser.errors, [], 'no console error (a CSP refusal would be one)');
});
