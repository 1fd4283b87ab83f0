// The console is rebuilt at start only when what it is built from changed: the source hash that decides it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { consoleSourceHash } from '../control-plane/src/console/console-build.ts';

t.test('the source hash follows the console sources and nothing else', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vp-console-hash-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(consoleSourceHash(dir), undefined, 'no sources (a production install): no hash, the shipped dist is used');
  mkdirSync(join(dir, 'src/app'), { recursive: true });
  writeFileSync(join(dir, 'src/app/App.tsx'), 'export const a = 1;\n');
  writeFileSync(join(dir, 'index.html'), '<!doctype html>\n');
  writeFileSync(join(dir, 'vite.config.ts'), 'export default {};\n');
  writeFileSync(join(dir, 'package.json'), '{}\n');
  const first = consoleSourceHash(dir);
  t.match(first, /^[0-9a-f]{64}$/);
  t.equal(consoleSourceHash(dir), first, 'the same files: the same hash');

  mkdirSync(join(dir, 'dist'));
  writeFileSync(join(dir, 'dist/index.html'), 'built');
  writeFileSync(join(dir, 'README.md'), 'notes');
  t.equal(consoleSourceHash(dir), first, 'the build output and other files do not count');

  for (const [file, content] of [
    ['src/app/App.tsx', 'export const a = 2;\n'],
    ['index.html', '<!doctype html><title>x</title>\n'],
    ['vite.config.ts', 'export default { base: "/" };\n'],
    ['package.json', '{ "version": "1" }\n'],
  ] as const) {
    const before = consoleSourceHash(dir);
    writeFileSync(join(dir, file), content);
    t.not(consoleSourceHash(dir), before, `a change to ${file} changes the hash`);
  }
  const before = consoleSourceHash(dir);
  writeFileSync(join(dir, 'src/app/New.tsx'), '');
  t.not(consoleSourceHash(dir), before, 'a new (even empty) source file changes the hash');
  const withNew = consoleSourceHash(dir);
  rmSync(join(dir, 'src/app/New.tsx'));
  writeFileSync(join(dir, 'src/app/Nex.tsx'), '');
  t.not(consoleSourceHash(dir), withNew, 'a rename changes the hash');
});
