// Untrusted dataset archives: ZIP, TAR and TAR.GZ built here, extracted with the path rules, the entry types
// that are skipped, the bomb limits (declared and counted while streaming), corrupt input and aborting.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGzip } from 'node:zlib';
import t from 'tap';
import tar from 'tar-stream';
import yazl from 'yazl';
import {
  ArchiveError,
  DEFAULT_LIMITS,
  archiveKindOf,
  openArchive,
  type ArchiveKind,
  type ExtractOptions,
} from '../control-plane/src/ingest/archive/extract.ts';
import { MAX_ARCHIVE_PATH, normalizeEntryPath } from '../control-plane/src/ingest/archive/safe-path.ts';

const MiB = 1024 * 1024;

const work = await mkdtemp(join(tmpdir(), 'archive-test-'));
t.teardown(() => rm(work, { recursive: true, force: true }));

type TarEntry = Parameters<tar.Pack['entry']>[0];

interface ZipItem {
  name: string;
  data?: Buffer;
  mode?: number;
  compress?: boolean;
  directory?: boolean;
}

async function zipOf(items: ZipItem[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const { name, data = Buffer.alloc(0), mode, compress = true, directory } of items) {
    if (directory) zip.addEmptyDirectory(name);
    else zip.addBuffer(data, name, { compress, ...(mode === undefined ? {} : { mode }) });
  }
  zip.end();
  return buffer(zip.outputStream);
}

async function tarOf(items: Array<{ header: TarEntry; data?: Buffer }>, gzip = false): Promise<Buffer> {
  const pack = tar.pack();
  for (const { header, data } of items) {
    if (data) pack.entry(header, data);
    else pack.entry(header);
  }
  pack.finalize();
  return buffer(gzip ? pack.pipe(createGzip()) : pack);
}

/** yazl refuses unsafe names, so archives are built with same-length stand-ins that are swapped afterwards. */
function rename(archive: Buffer, names: Record<string, string>): Buffer {
  let bytes = archive.toString('latin1');
  for (const [from, to] of Object.entries(names)) bytes = bytes.replaceAll(from, to);
  return Buffer.from(bytes, 'latin1');
}

/** Offsets of the central directory headers of a ZIP (signature PK\1\2). */
function centralHeaders(zip: Buffer): number[] {
  const offsets: number[] = [];
  for (let at = zip.indexOf('PK\x01\x02'); at !== -1; at = zip.indexOf('PK\x01\x02', at + 1)) offsets.push(at);
  return offsets;
}

let runs = 0;

/**
 * Writes the archive, opens it with `out` beside it as the work folder, and reads every listed file: a TAR
 * is extracted there; a ZIP's files (read in place) are written there too, so both can be checked on disk.
 */
async function extract(archive: Buffer, kind: ArchiveKind, options?: ExtractOptions) {
  const dir = join(work, `run-${++runs}`);
  const dest = join(dir, 'out');
  await mkdir(dir);
  await writeFile(join(dir, `archive.${kind}`), archive);
  const run = (async () => {
    const opened = await openArchive(join(dir, `archive.${kind}`), kind, dest, options);
    try {
      for (const file of kind === 'zip' ? opened.files : []) {
        await mkdir(dirname(join(dest, file.path)), { recursive: true });
        await writeFile(join(dest, file.path), await opened.read(file.path));
      }
      return { root: dest, files: opened.files, skipped: opened.skipped };
    } finally {
      await opened.close();
    }
  })();
  return { dir, dest, run };
}

type Asserts = Pick<typeof t, 'ok' | 'match'>;

/** Asserts the extraction fails with an ArchiveError whose message matches. */
async function refuses(t: Asserts, run: Promise<unknown>, message: RegExp) {
  const error = await run.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  t.ok(error instanceof ArchiveError, 'an ArchiveError');
  t.match((error as Error | undefined)?.message, message);
}

t.test('normalizeEntryPath', async (t) => {
  t.same(normalizeEntryPath('a/b.jpg'), { path: 'a/b.jpg' });
  t.same(normalizeEntryPath('./a/./b.jpg'), { path: 'a/b.jpg' }, 'leading ./ and . segments');
  t.same(normalizeEntryPath('././a//b///c.txt'), { path: 'a/b/c.txt' }, 'duplicate slashes');
  t.same(normalizeEntryPath('a\\b\\c.png'), { path: 'a/b/c.png' }, 'backslashes');
  t.same(normalizeEntryPath('dataset..v2/x..y.jpg'), { path: 'dataset..v2/x..y.jpg' }, 'dots inside names are fine');
  t.same(normalizeEntryPath('/etc/passwd'), { skip: 'absolute path' });
  t.same(normalizeEntryPath('//server/share/x'), { skip: 'absolute path' });
  t.same(normalizeEntryPath('\\\\server\\share\\x'), { skip: 'absolute path' });
  t.same(normalizeEntryPath('C:/x'), { skip: 'absolute path' });
  t.same(normalizeEntryPath('c:\\x'), { skip: 'absolute path' });
  t.same(normalizeEntryPath('C:x'), { skip: 'absolute path' }, 'drive-relative');
  for (const raw of ['../evil', 'a/../../b', 'a/../b', '..', 'a\\..\\b', './..']) {
    t.same(normalizeEntryPath(raw), { skip: 'parent directory (..) in path' }, raw);
  }
  t.same(normalizeEntryPath('a\u0000b'), { skip: 'control character in name' });
  t.same(normalizeEntryPath('a\nb'), { skip: 'control character in name' });
  t.same(normalizeEntryPath('a\u007fb'), { skip: 'control character in name' });
  t.same(normalizeEntryPath(''), { skip: 'empty name' });
  t.same(normalizeEntryPath('.'), { skip: 'empty name' });
  t.same(normalizeEntryPath('a/'), { skip: 'directory' });
  t.same(normalizeEntryPath('./'), { skip: 'directory' });
  t.same(normalizeEntryPath('__MACOSX/'), { skip: 'directory' });
  t.same(normalizeEntryPath(`${'a/'.repeat(511)}bb`), { path: `${'a/'.repeat(511)}bb` }, 'exactly 1024 characters');
  t.same(normalizeEntryPath(`${'a/'.repeat(MAX_ARCHIVE_PATH / 2)}b`), { skip: 'path longer than 1024 characters' });
  t.same(normalizeEntryPath(`${'./'.repeat(MAX_ARCHIVE_PATH)}b`), { path: 'b' }, 'the limit is on the normalized path');
  t.same(normalizeEntryPath('a'.repeat(256)), { skip: 'name longer than 255 bytes' });
  t.same(normalizeEntryPath('é'.repeat(128)), { skip: 'name longer than 255 bytes' }, 'bytes, not characters');
  for (const raw of ['__MACOSX/a/._x.jpg', '__MACOSX/x.jpg', 'a/._x.jpg', '.DS_Store', 'a/.DS_Store', 'b/Thumbs.db']) {
    t.same(normalizeEntryPath(raw), { skip: 'ignored' }, raw);
  }
  t.same(normalizeEntryPath('a/__MACOSX/x.jpg'), { path: 'a/__MACOSX/x.jpg' }, 'only at the top');
  t.same(normalizeEntryPath('.hidden/x'), { path: '.hidden/x' });
});

t.test('archiveKindOf', async (t) => {
  t.equal(archiveKindOf('data.zip'), 'zip');
  t.equal(archiveKindOf('DATA.ZIP'), 'zip');
  t.equal(archiveKindOf('a.b.tar'), 'tar');
  t.equal(archiveKindOf('x.tar.gz'), 'tgz');
  t.equal(archiveKindOf('x.TGZ'), 'tgz');
  t.equal(archiveKindOf('labels.ndjson'), 'ndjson');
  t.equal(archiveKindOf('x.gz'), null);
  t.equal(archiveKindOf('x.rar'), null);
  t.equal(archiveKindOf('zip'), null);
});

t.test('DEFAULT_LIMITS', async (t) => {
  t.same(DEFAULT_LIMITS, {
    maxEntries: 1_000_000,
    maxEntryBytes: 512 * MiB,
    maxTotalBytes: 64 * 1024 * MiB,
    maxRatio: 200,
  });
});

const photo = randomBytes(100_000);
const text = Buffer.from('class,x,y\n'.repeat(1000));

t.test(
  'a ZIP: nested files with their exact bytes in archive order, directories silent, progress per file',
  async (t) => {
    const archive = await zipOf([
      { name: 'images/', directory: true },
      { name: 'images/train/a.jpg', data: photo, compress: false },
      { name: 'labels/train/a.txt', data: text },
      { name: 'empty.txt' },
    ]);
    const progress: unknown[] = [];
    const { dest, run } = await extract(archive, 'zip', { onProgress: (p) => progress.push(p) });
    const result = await run;
    t.equal(result.root, dest);
    t.same(result.files, [
      { path: 'images/train/a.jpg', size: photo.length },
      { path: 'labels/train/a.txt', size: text.length },
      { path: 'empty.txt', size: 0 },
    ]);
    t.same(result.skipped, []);
    t.ok((await readFile(join(dest, 'images/train/a.jpg'))).equals(photo));
    t.ok((await readFile(join(dest, 'labels/train/a.txt'))).equals(text));
    t.equal((await stat(join(dest, 'empty.txt'))).size, 0);
    // ZIP entries stream several at once: one progress call per file, ending at the totals.
    t.equal(progress.length, 3);
    t.same(progress.at(-1), { entries: 4, bytes: photo.length + text.length });
  },
);

for (const kind of ['tar', 'tgz'] as const) {
  t.test(`a ${kind.toUpperCase()}: nested files with their exact bytes`, async (t) => {
    const archive = await tarOf(
      [
        { header: { name: './', type: 'directory' } },
        { header: { name: './images/train/a.jpg' }, data: photo },
        { header: { name: 'labels/train/a.txt' }, data: text },
        { header: { name: 'empty.txt' }, data: Buffer.alloc(0) },
      ],
      kind === 'tgz',
    );
    const { dest, run } = await extract(archive, kind);
    const result = await run;
    t.same(result.files, [
      { path: 'images/train/a.jpg', size: photo.length },
      { path: 'labels/train/a.txt', size: text.length },
      { path: 'empty.txt', size: 0 },
    ]);
    t.same(result.skipped, []);
    t.ok((await readFile(join(dest, 'images/train/a.jpg'))).equals(photo));
    t.ok((await readFile(join(dest, 'labels/train/a.txt'))).equals(text));
  });
}

/** Every path under `dir`, relative to it. */
const tree = async (dir: string) => (await readdir(dir, { recursive: true })).sort();

t.test('a TAR: unsafe names, links, special files, junk and duplicates are skipped with reasons', async (t) => {
  const archive = await tarOf([
    { header: { name: 'ok/a.txt' }, data: Buffer.from('first') },
    { header: { name: '../evil' }, data: Buffer.from('x') },
    { header: { name: '/etc/passwd' }, data: Buffer.from('x') },
    { header: { name: 'C:\\x' }, data: Buffer.from('x') },
    { header: { name: 'a/../../b' }, data: Buffer.from('x') },
    { header: { name: 'ok/link', type: 'symlink', linkname: '/etc/passwd' } },
    { header: { name: 'ok/hard', type: 'link', linkname: 'ok/a.txt' } },
    { header: { name: 'ok/fifo', type: 'fifo' } },
    { header: { name: 'ok/null', type: 'character-device', devmajor: 1, devminor: 3 } },
    { header: { name: '__MACOSX/ok/._a.txt' }, data: randomBytes(200_000) }, // skipped entries are drained
    { header: { name: 'ok/.DS_Store' }, data: Buffer.from('x') },
    { header: { name: './ok//a.txt' }, data: Buffer.from('second') },
    { header: { name: 'ok/a.txt/inner' }, data: Buffer.from('x') },
    { header: { name: 'ok' }, data: Buffer.from('x') },
    { header: { name: 'ok/b.txt' }, data: Buffer.from('last') },
  ]);
  const { dir, dest, run } = await extract(archive, 'tar');
  const result = await run;
  t.same(result.files, [
    { path: 'ok/a.txt', size: 5 },
    { path: 'ok/b.txt', size: 4 },
  ]);
  t.same(result.skipped, [
    { path: '../evil', reason: 'parent directory (..) in path' },
    { path: '/etc/passwd', reason: 'absolute path' },
    { path: 'C:\\x', reason: 'absolute path' },
    { path: 'a/../../b', reason: 'parent directory (..) in path' },
    { path: 'ok/link', reason: 'symlink' },
    { path: 'ok/hard', reason: 'link' },
    { path: 'ok/fifo', reason: 'special file' },
    { path: 'ok/null', reason: 'special file' },
    { path: '__MACOSX/ok/._a.txt', reason: 'ignored' },
    { path: 'ok/.DS_Store', reason: 'ignored' },
    { path: 'ok/a.txt', reason: 'duplicate' },
    { path: 'ok/a.txt/inner', reason: 'a file is in the way of its folder' },
    { path: 'ok', reason: 'a folder of that name exists' },
  ]);
  t.equal(await readFile(join(dest, 'ok/a.txt'), 'utf8'), 'first', 'the first of duplicates is kept');
  t.same(
    await tree(dir),
    ['archive.tar', 'out', 'out/ok', 'out/ok/a.txt', 'out/ok/b.txt'],
    'nothing else written anywhere',
  );
});

t.test('a ZIP: unsafe names, symlinks, encrypted entries, junk and duplicates are skipped with reasons', async (t) => {
  const plain = await zipOf([
    { name: 'ok/a.txt', data: Buffer.from('first') },
    { name: 'P1/evil', data: Buffer.from('x') },
    { name: 'Xetc/passwd', data: Buffer.from('x') },
    { name: 'P3/x', data: Buffer.from('x') },
    { name: 'ok/link', data: Buffer.from('/etc/passwd'), mode: 0o120777 },
    { name: 'ok/fifo', mode: 0o010644 },
    { name: 'ok/secret.txt', data: text },
    { name: '__MACOSX/ok/._a.txt', data: Buffer.from('x') },
    { name: 'ok/a.txt', data: Buffer.from('second') },
    { name: 'ok/b.txt', data: Buffer.from('last'), mode: 0o100644 },
  ]);
  const archive = rename(plain, { 'P1/evil': '../evil', 'Xetc/passwd': '/etc/passwd', 'P3/x': 'C:\\x' });
  // Mark ok/secret.txt encrypted (general purpose bit 0) in its central directory header, which yauzl reads.
  const secret = centralHeaders(archive)[6];
  archive.writeUInt16LE(archive.readUInt16LE(secret + 8) | 1, secret + 8);
  const { dir, dest, run } = await extract(archive, 'zip');
  const result = await run;
  t.same(result.files, [
    { path: 'ok/a.txt', size: 5 },
    { path: 'ok/b.txt', size: 4 },
  ]);
  t.same(result.skipped, [
    { path: '../evil', reason: 'parent directory (..) in path' },
    { path: '/etc/passwd', reason: 'absolute path' },
    { path: 'C:/x', reason: 'absolute path' }, // yauzl turns backslashes to slashes
    { path: 'ok/link', reason: 'symlink' },
    { path: 'ok/fifo', reason: 'special file' },
    { path: 'ok/secret.txt', reason: 'encrypted' },
    { path: '__MACOSX/ok/._a.txt', reason: 'ignored' },
    { path: 'ok/a.txt', reason: 'duplicate' },
  ]);
  t.equal(await readFile(join(dest, 'ok/a.txt'), 'utf8'), 'first');
  t.same(await tree(dir), ['archive.zip', 'out', 'out/ok', 'out/ok/a.txt', 'out/ok/b.txt']);
});

const zeros = Buffer.alloc(4 * MiB);

t.test('a ZIP bomb is refused by its declared size, before anything is read', async (t) => {
  const { dest, run } = await extract(await zipOf([{ name: 'zeros.bin', data: zeros }]), 'zip', {
    limits: { maxRatio: 100 },
  });
  await refuses(t, run, /^expansion ratio above 100:1 \(zip bomb\?\)$/);
  t.notOk(existsSync(dest), 'a ZIP is read in place: nothing is written');
});

t.test('a TAR.GZ bomb is refused while streaming, counting the gunzipped bytes of skipped entries too', async (t) => {
  const archive = await tarOf([{ header: { name: '__MACOSX/zeros.bin' }, data: zeros }], true);
  await refuses(
    t,
    (await extract(archive, 'tgz', { limits: { maxRatio: 100 } })).run,
    /^expansion ratio above 100:1 \(zip bomb\?\)$/,
  );
  const { run } = await extract(archive, 'tgz', { limits: { maxRatio: 10_000 } });
  t.same(
    (await run).skipped,
    [{ path: '__MACOSX/zeros.bin', reason: 'ignored' }],
    'within a higher ratio it is read through',
  );
});

t.test('small archives are exempt from the ratio check', async (t) => {
  const { run } = await extract(await zipOf([{ name: 'zeros.bin', data: Buffer.alloc(MiB) }]), 'zip', {
    limits: { maxRatio: 2 },
  });
  t.same((await run).files, [{ path: 'zeros.bin', size: MiB }]);
});

t.test('per-entry, total and entry-count limits', async (t) => {
  const files = [
    { name: 'a.bin', data: randomBytes(800) },
    { name: 'b.bin', data: randomBytes(800) },
    { name: 'c.bin', data: randomBytes(2048) },
  ];
  const zip = await zipOf(files);
  const tarball = await tarOf(files.map(({ name, data }) => ({ header: { name }, data })));
  for (const [kind, archive] of [
    ['zip', zip],
    ['tar', tarball],
  ] as const) {
    await refuses(
      t,
      (await extract(archive, kind, { limits: { maxEntryBytes: 1024 } })).run,
      /^entry "c.bin" is larger than 1 KiB$/,
    );
    await refuses(
      t,
      (await extract(archive, kind, { limits: { maxTotalBytes: 1000 } })).run,
      /^the archive expands to more than 1000 bytes$/,
    );
    await refuses(
      t,
      (await extract(archive, kind, { limits: { maxEntries: 2 } })).run,
      /^the archive has more than 2 entries$/,
    );
    t.equal(
      (await (await extract(archive, kind, { limits: { maxEntries: 3, maxTotalBytes: 3648 } })).run).files.length,
      3,
      'at the limits',
    );
  }
});

t.test('a ZIP whose header understates the size is stopped while streaming', async (t) => {
  const archive = await zipOf([{ name: 'big.bin', data: Buffer.alloc(2 * MiB) }]);
  const header = centralHeaders(archive)[0];
  archive.writeUInt32LE(100, header + 24); // the uncompressed size in the central directory
  const { dest, run } = await extract(archive, 'zip', { limits: { maxEntryBytes: 1000 } });
  await refuses(
    t,
    run,
    /^the ZIP archive is corrupt or truncated: too many bytes in the stream|^entry "big.bin" is larger than 1000 bytes$/,
  );
  const written = await stat(join(dest, 'big.bin')).then(
    (file) => file.size,
    () => 0,
  );
  t.ok(written <= 1000, 'no more than the limit written');
});

t.test(
  'localFile: a ZIP entry is extracted into the work folder when asked for, a TAR file is where it was extracted',
  async (t) => {
    const data = randomBytes(100_000);
    for (const [kind, archive] of [
      ['zip', await zipOf([{ name: 'images/a.bin', data }])],
      ['tar', await tarOf([{ header: { name: 'images/a.bin' }, data }])],
    ] as const) {
      const dir = join(work, `run-${++runs}`);
      await mkdir(dir);
      await writeFile(join(dir, 'archive'), archive);
      const opened = await openArchive(join(dir, 'archive'), kind, join(dir, 'out'));
      const file = await opened.localFile('images/a.bin');
      t.equal(file, join(dir, 'out', 'images/a.bin'), `${kind}: in the work folder`);
      t.ok((await readFile(file)).equals(data), `${kind}: byte for byte`);
      await opened.close();
    }
    // Bytes that differ from the declared size fail as they do for read().
    const lying = await zipOf([{ name: 'big.bin', data: Buffer.alloc(2 * MiB) }]);
    lying.writeUInt32LE(100, centralHeaders(lying)[0] + 24);
    const dir = join(work, `run-${++runs}`);
    await mkdir(dir);
    await writeFile(join(dir, 'archive.zip'), lying);
    const opened = await openArchive(join(dir, 'archive.zip'), 'zip', join(dir, 'out'));
    await refuses(
      t,
      opened.localFile('big.bin'),
      /^the ZIP archive is corrupt or truncated: too many bytes in the stream/,
    );
    await opened.close();
  },
);

t.test('corrupt, truncated and mislabeled archives', async (t) => {
  const zip = await zipOf([{ name: 'a.bin', data: randomBytes(50_000) }]);
  await refuses(
    t,
    (await extract(zip.subarray(0, zip.length / 2), 'zip')).run,
    /^the ZIP archive is corrupt or truncated: /,
  );
  const tgz = await tarOf([{ header: { name: 'a.bin' }, data: randomBytes(50_000) }], true);
  await refuses(
    t,
    (await extract(tgz.subarray(0, tgz.length / 2), 'tgz')).run,
    /^the TAR.GZ archive is corrupt or truncated: unexpected end of file$/,
  );
  const tarball = await tarOf([{ header: { name: 'a.bin' }, data: randomBytes(50_000) }]);
  await refuses(
    t,
    (await extract(tarball.subarray(0, 20_000), 'tar')).run,
    /^the TAR archive is corrupt or truncated: Unexpected end of data$/,
  );
  // A flipped byte in the deflated data.
  const garbled = Buffer.from(await zipOf([{ name: 'a.txt', data: text }]));
  garbled[60] ^= 0xff;
  await refuses(t, (await extract(garbled, 'zip')).run, /^the ZIP archive is corrupt or truncated: /);
  const noise = randomBytes(10_000);
  await refuses(t, (await extract(noise, 'zip')).run, /^the ZIP archive is corrupt or truncated: /);
  await refuses(t, (await extract(noise, 'tgz')).run, /^the TAR.GZ archive is corrupt or truncated: /);
  await refuses(t, (await extract(noise, 'tar')).run, /^the TAR archive is corrupt or truncated: /);
  await refuses(t, (await extract(zip, 'tgz')).run, /^the TAR.GZ archive is corrupt or truncated: /);
});

t.test('aborting rejects with the signal reason, before the start and between entries', async (t) => {
  const archive = await tarOf(
    [
      { header: { name: 'a.bin' }, data: photo },
      { header: { name: 'b.bin' }, data: photo },
    ],
    true,
  );
  const stop = new Error('job cancelled');
  const before = new AbortController();
  before.abort(stop);
  t.equal(await (await extract(archive, 'tgz', { signal: before.signal })).run.catch((e: unknown) => e), stop);

  const during = new AbortController();
  const { dest, run } = await extract(archive, 'tgz', { signal: during.signal, onProgress: () => during.abort(stop) });
  t.equal(await run.catch((e: unknown) => e), stop);
  t.same(await tree(dest), ['a.bin']);
});

t.test('aborting mid-entry rejects with the signal reason', async (t) => {
  // The archive is a FIFO fed half the entry, so the extraction is certainly inside it when aborted.
  const dir = join(work, 'fifo');
  await mkdir(dir);
  execFileSync('mkfifo', [join(dir, 'archive.tar')]);
  const controller = new AbortController();
  const stop = new Error('job cancelled');
  const run = openArchive(join(dir, 'archive.tar'), 'tar', join(dir, 'out'), { signal: controller.signal });
  const writer = await open(join(dir, 'archive.tar'), 'w');
  t.teardown(() => writer.close());
  await writer.write((await tarOf([{ header: { name: 'a.bin' }, data: photo }])).subarray(0, 50_000));
  const written = () =>
    stat(join(dir, 'out/a.bin')).then(
      (file) => file.size,
      () => 0,
    );
  while ((await written()) === 0) await sleep(5);
  controller.abort(stop);
  t.equal(await run.catch((e: unknown) => e), stop);
  t.ok((await written()) < photo.length, 'stopped inside the entry');
});
