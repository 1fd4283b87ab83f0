// Finished jobs' work dirs are removed once their keep time is over, or earlier when the disk runs short: only dirs
// noted as a finished job's, never one a job runs in (or above or under), never outside the work root; empty parents
// go with them.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { WorkDirRetention } from '../worker-agent/src/work-dir-retention.ts';

const HOUR = 3_600_000;

function setup(t: { teardown(fn: () => void): void }, keepMs: number, inUse: string[] = []) {
  const root = mkdtempSync(join(tmpdir(), 'vp-retention-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = (path: string) => {
    mkdirSync(join(root, path), { recursive: true });
    writeFileSync(join(root, path, 'weights.pt'), 'w');
    return path;
  };
  const retention = new WorkDirRetention({ workRoot: root, keepMs, log: () => {}, inUse: () => inUse });
  return { root, dir, retention, exists: (path: string) => existsSync(join(root, path)) };
}

t.test('kept for the keep time after the end, then swept with its empty parents', async (t) => {
  const { dir, retention, exists } = setup(t, 24 * HOUR);
  const ended = Date.now();
  await retention.ended(dir('training/j1/1'), ended);
  dir('training/j2/1'); // never noted: not the sweep's
  await retention.sweep(ended + 23 * HOUR);
  t.ok(exists('training/j1/1'), 'within the keep time');
  await retention.sweep(ended + 25 * HOUR);
  t.notOk(exists('training/j1'), 'removed, and its empty parent');
  t.ok(exists('training/j2/1'), 'a dir no finished job left is not touched');
  t.ok(exists('training'), 'a parent that is not empty stays');
});

t.test('0 hours: removed as soon as the end is reported', async (t) => {
  const { dir, retention, exists } = setup(t, 0);
  await retention.ended(dir('jobs/quick'));
  t.notOk(exists('jobs'));
});

t.test('never while a job runs in it, under it or above it; a later end restarts the keep time', async (t) => {
  const inUse: string[] = [];
  const { dir, retention, exists } = setup(t, HOUR, inUse);
  const ended = Date.now();
  await retention.ended(dir('shared'), ended);
  await retention.ended(dir('outer'), ended);
  await retention.ended(dir('inner/a'), ended);
  inUse.push('shared', 'outer/job', 'inner');
  await retention.sweep(ended + 2 * HOUR);
  t.ok(exists('shared') && exists('outer') && exists('inner/a'), 'all in use');
  inUse.length = 0;
  await retention.ended('shared', ended + 2 * HOUR);
  await retention.sweep(ended + 2 * HOUR + 1);
  t.ok(exists('shared'), 'its keep time restarted when the second job ended');
  t.notOk(exists('outer') || exists('inner'));
});

t.test('a note naming a dir outside the work root or in the agent state dir removes nothing', async (t) => {
  const { root, retention } = setup(t, 0);
  const outside = mkdtempSync(join(tmpdir(), 'vp-retention-outside-'));
  t.teardown(() => rmSync(outside, { recursive: true, force: true }));
  await retention.ended('../' + outside.split('/').at(-1));
  await retention.ended('.vp-jobs');
  await retention.ended('.');
  t.ok(existsSync(outside) && existsSync(join(root, '.vp-jobs')) && existsSync(root));
});

t.test(
  'a disk short of space: before a job starts, the oldest kept dirs go early until a fifth is free',
  { skip: process.getuid?.() === 0 ? false : 'mounting a small file system needs root' },
  async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'vp-retention-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=20m', 'tmpfs', root]);
    t.teardown(() => {
      execFileSync('umount', ['-l', root]);
      rmSync(root, { recursive: true, force: true });
    });
    const MiB = 2 ** 20;
    const dir = (path: string, mib: number) => {
      mkdirSync(join(root, path), { recursive: true });
      writeFileSync(join(root, path, 'weights.pt'), Buffer.alloc(mib * MiB, 1));
      return path;
    };
    const inUse = ['exports/a'];
    const retention = new WorkDirRetention({ workRoot: root, keepMs: 24 * HOUR, log: () => {}, inUse: () => inUse });
    const ended = Date.now();
    await retention.ended(dir('exports/a', 5), ended - 3000); // the oldest, but a running job uses it
    await retention.ended(dir('exports/b', 5), ended - 2000);
    await retention.ended(dir('training/c', 5), ended - 1000);
    dir('datasets/cache', 3); // not a finished job's: never the retention's
    const exists = (path: string) => existsSync(join(root, path));

    await retention.makeRoom();
    t.notOk(exists('exports/b'), 'the oldest kept dir no job uses went, within its keep time');
    t.ok(exists('exports/a'), 'the one a job runs in stayed');
    t.ok(exists('training/c') && exists('datasets/cache'), 'no more than needed went');
    await retention.makeRoom();
    t.ok(exists('training/c'), 'with room enough, nothing goes');
  },
);
