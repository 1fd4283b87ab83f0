// The background control plane's log (lib.sh start_service, where systemd and its journal do not run the host):
//   node rotating-log.ts FILE MAX_BYTES KEEP
// appends its standard input to FILE and keeps FILE within MAX_BYTES: before a write would cross that, FILE becomes
// FILE.1 (FILE.1 becomes FILE.2, ..., FILE.KEEP is dropped) and a new FILE is started, cut at a line end where one
// fits. A FILE already over the bound (written before this writer) is rotated before the first write.
// It ends when its input does: after the control plane and whatever it started on the same output. The signals that
// end a session or a terminal are ignored, so the last lines of a stopping control plane are still written; a write
// that fails (disk full) loses those bytes, never the control plane, whose output would otherwise stop at a full pipe.
import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';

const [file = '', maxArgument, keepArgument] = process.argv.slice(2);
const maxBytes = Number(maxArgument);
const keep = Number(keepArgument);
if (file === '' || !Number.isSafeInteger(maxBytes) || maxBytes < 1 || !Number.isSafeInteger(keep) || keep < 1) {
  console.error('usage: rotating-log.ts FILE MAX_BYTES KEEP (MAX_BYTES and KEEP: whole numbers from 1)');
  process.exit(2);
}
for (const signal of ['SIGHUP', 'SIGINT', 'SIGTERM'] as const) process.on(signal, () => {});

/** The open FILE and its size; undefined after a failed write, so that the next chunk opens FILE again. */
let log: { fd: number; size: number } | undefined;

function openLog(): { fd: number; size: number } {
  const fd = openSync(file, 'a');
  return { fd, size: fstatSync(fd).size };
}

function writeAll(fd: number, data: Buffer): void {
  for (let written = 0; written < data.length;) written += writeSync(fd, data, written);
}

/** Closes FILE; the next write opens it again. */
function closeLog(): void {
  try {
    if (log) closeSync(log.fd);
  } catch {}
  log = undefined;
}

function rotate(): void {
  closeLog();
  for (let n = keep - 1; n >= 0; n--) {
    try {
      renameSync(n === 0 ? file : `${file}.${n}`, `${file}.${n + 1}`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  log = openLog();
}

function append(data: Buffer): void {
  log ??= openLog();
  while (log.size + data.length > maxBytes) {
    const room = maxBytes - log.size;
    // The whole lines that fit; an empty file takes the start of a line longer than itself.
    const lines = room > 0 ? data.lastIndexOf(0x0a, room - 1) + 1 : 0;
    const part = lines > 0 ? lines : log.size === 0 ? room : 0;
    writeAll(log.fd, data.subarray(0, part));
    data = data.subarray(part);
    rotate();
  }
  writeAll(log.fd, data);
  log.size += data.length;
}

process.stdin.on('data', (chunk: Buffer) => {
  try {
    append(chunk);
  } catch (error) {
    closeLog();
    // A note where the lost output would have been, if it can be written (a full disk may have room again).
    try {
      append(Buffer.from(`rotating-log: ${(error as Error).message}: ${chunk.length} bytes of output lost\n`));
    } catch {
      closeLog();
    }
  }
});
