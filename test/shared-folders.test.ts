// The agent's shared folders against a real file system, when a folder inside the share is swapped for a symlink that
// leads out of it between the agent's check of a path and its open (a race a local user of the host can run): the
// swap is made deterministic by the step SharedFolders runs between the two. Reads and listings are refused, and
// nothing outside the share is read.
import { mkdirSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { FolderError, SharedFolders } from '../worker-agent/src/shared-folders.ts';

function setUp(t: Test) {
  const dir = realpathSync(t.testdir());
  const shared = join(dir, 'shared');
  const outside = join(dir, 'outside');
  mkdirSync(join(shared, 'imgs'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(shared, 'imgs', 'a.jpg'), 'inside');
  writeFileSync(join(outside, 'a.jpg'), 'outside secret');
  const imgs = join(shared, 'imgs');
  let armed = false;
  /** Once armed, the next step between the check and the open of imgs or a path in it swaps imgs for a symlink out. */
  const swap = (path: string) => {
    if (!armed || (path !== imgs && !path.startsWith(`${imgs}/`))) return;
    armed = false;
    renameSync(imgs, join(shared, 'imgs-moved'));
    symlinkSync(outside, imgs);
  };
  const folders = new SharedFolders([shared], { checked: swap });
  return { shared, folders, arm: () => (armed = true) };
}

const refusal = (t: Test, error: unknown, key: string) => {
  t.ok(error instanceof FolderError, `a FolderError (${(error as Error | undefined)?.message})`);
  t.match(error, { kind: 'denied', message: `${key} leads outside the folder` });
};

t.test(
  'a read of a file whose folder is swapped for a symlink out of the share after the check is refused',
  async (t) => {
    const { shared, folders, arm } = setUp(t);
    const root = await folders.resolveRoot(shared);
    const before = await folders.open(root, 'imgs/a.jpg', 1000);
    t.equal((await before.file.readFile()).toString(), 'inside', 'read as usual without a swap');
    await before.file.close();
    arm();
    const error = await folders.open(root, 'imgs/a.jpg', 1000).then(
      async ({ file }) => {
        const read = (await file.readFile()).toString();
        await file.close();
        return new Error(`read ${JSON.stringify(read)}`);
      },
      (e: unknown) => e,
    );
    refusal(t, error, 'imgs/a.jpg');
  },
);

t.test('a listing of a folder swapped for a symlink out of the share after the check is refused', async (t) => {
  const { shared, folders, arm } = setUp(t);
  const root = await folders.resolveRoot(shared);
  t.same(
    (await folders.browse(root, 'imgs/', undefined, 10)).entries.map((entry) => entry.key),
    ['imgs/a.jpg'],
  );
  arm();
  const error = await folders.browse(root, 'imgs/', undefined, 10).then(
    (page) => new Error(`listed ${JSON.stringify(page)}`),
    (e: unknown) => e,
  );
  refusal(t, error, 'imgs');
});

t.test('a walk into a folder swapped for a symlink out of the share on the way is refused', async (t) => {
  const { shared, folders, arm } = setUp(t);
  const root = await folders.resolveRoot(shared);
  t.same(
    (await folders.list(root, '', undefined, 10)).objects.map((object) => object.key),
    ['imgs/a.jpg'],
  );
  arm();
  const error = await folders.list(root, '', undefined, 10).then(
    (page) => new Error(`listed ${JSON.stringify(page)}`),
    (e: unknown) => e,
  );
  refusal(t, error, 'imgs');
});
