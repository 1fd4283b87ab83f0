// `npm start` as root with DATA_DIR inside a directory only root may enter (what `mktemp -d` makes): the embedded
// PostgreSQL runs as the user postgres and could not reach its data; the control plane says so in one line and what
// to do, instead of initdb's raw "could not access directory ... Permission denied".
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { firstUnsearchable } from '../control-plane/src/db/embedded-access.ts';
import type { Teardown } from './helpers/main-process.ts';
import { runNode } from './helpers/run-node.ts';

function privateDir(t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), 'vp-access-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function statMode(path: string): number {
  return statSync(path).mode & 0o777;
}

t.test(
  'as root, DATA_DIR under a directory only root may enter: one line saying what to do',
  { skip: process.getuid?.() !== 0 && 'needs root' },
  async (t) => {
    const dir = privateDir(t);
    t.equal(statMode(dir), 0o700, 'mktemp made it 0700');
    const dataDir = join(dir, 'data');
    const { code, stdout, stderr } = await runNode(['control-plane/src/main.ts'], {
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      EMBEDDED_PG_PORT: '1',
      HOST: '127.0.0.1',
      PORT: '0',
    });
    t.equal(code, 78, 'exit status 78 (EX_CONFIG), so systemd does not restart it');
    t.equal(stdout, '');
    const lines = stderr.trim().split('\n');
    t.equal(lines.length, 1, `one line: ${stderr}`);
    t.match(
      lines[0],
      `The embedded PostgreSQL runs as the user postgres when the control plane runs as root, and cannot enter ${dir} (mode 0700`,
    );
    t.match(
      lines[0],
      `on the way to its data in ${join(dataDir, 'postgres')}: run chmod o+x ${dir}, or choose a DATA_DIR it can reach`,
    );
    t.notMatch(stderr, /initdb|Permission denied/);
    t.notOk(existsSync(join(dataDir, 'postgres')), 'nothing initialised');
  },
);

t.test('which directory a user cannot enter', async (t) => {
  const dir = privateDir(t);
  const inner = join(dir, 'a', 'b');
  mkdirSync(inner, { recursive: true, mode: 0o755 });
  const stranger = { uid: 54321, gid: 54321 };
  chmodSync(dir, 0o700);
  t.equal(firstUnsearchable(join(inner, 'not-yet'), stranger), dir, 'the first blocked directory, outermost first');
  t.equal(
    firstUnsearchable(join(inner, 'not-yet'), undefined),
    dir,
    'a user not created yet is neither owner nor group',
  );
  chmodSync(dir, 0o701);
  t.equal(firstUnsearchable(join(inner, 'not-yet'), stranger), undefined, 'search permission for others is enough');
  chmodSync(join(dir, 'a'), 0o750);
  t.equal(firstUnsearchable(inner, stranger), join(dir, 'a'));
  if (process.getuid?.() === 0) {
    chownSync(join(dir, 'a'), 0, stranger.gid);
    t.equal(firstUnsearchable(inner, stranger), undefined, 'the group bit counts for the primary group');
    chownSync(join(dir, 'a'), stranger.uid, 0);
    chmodSync(join(dir, 'a'), 0o077);
    t.equal(firstUnsearchable(inner, stranger), join(dir, 'a'), 'the owner bit alone counts for the owner');
  }
});
