// Why a job failed, in one line a user can be shown: the last line of its output that names an error, made safe to
// show (no keys, no host paths outside the job's work dir, no terminal escapes, bounded).

export interface CauseContext {
  /** The job's work dir as absolute paths (as configured and as resolved): shown relative to it. */
  workDirs: string[];
  /** The job's environment: the values of names that say KEY, TOKEN, SECRET or PASSWORD are redacted. */
  env: Record<string, string>;
}

export const MAX_CAUSE_CHARS = 500;
const REDACTED = '[redacted]';
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD/i;
/** A Python exception line: `FileNotFoundError: …`, `torch.cuda.OutOfMemoryError: …`, `RuntimeError`. */
const EXCEPTION_LINE = /^[A-Za-z_][\w.]*(?:Error|Exception)\b(?::.*)?$/;
/** Terminal escapes (CSI, OSC, two-byte) and control characters but the tab. */
// oxlint-disable-next-line no-control-regex -- strips terminal escapes and control characters on purpose
const ESCAPES = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-_])|[\x00-\x08\x0a-\x1f\x7f]/g;
/** What may follow a `/` in a path as printed: anything but spaces, quotes and the punctuation around paths. */
const PATH_CHAR = `[^\\s'"\`,;:()[\\]{}<>|]`;
/** An absolute path: a `/` not part of a relative path, a word or a URL (`scheme://host/path`). */
const ABSOLUTE_PATH = new RegExp(`(?<![\\w.~/-])(?!//)/${PATH_CHAR}+`, 'g');

/** The last exception line of the output, else its last non-empty line; sanitised. Undefined when there is none. */
export function failureCause(lines: readonly string[], context: CauseContext): string | undefined {
  const plain = lines.map((line) => line.replace(ESCAPES, '').trim()).filter((line) => line !== '');
  const line = plain.findLast((candidate) => EXCEPTION_LINE.test(candidate)) ?? plain.at(-1);
  return line === undefined ? undefined : sanitizeCause(line, context);
}

/** Secrets redacted, paths in the work dir made relative and other absolute paths cut to their last part, escapes stripped, capped. */
export function sanitizeCause(line: string, { workDirs, env }: CauseContext): string {
  let text = line.replace(ESCAPES, '');
  const secrets = Object.entries(env)
    .filter(([name, value]) => SECRET_NAME.test(name) && value.length >= 4)
    .map(([, value]) => value)
    .sort((a, b) => b.length - a.length);
  for (const secret of secrets) text = text.replaceAll(secret, REDACTED);
  text = text
    .replace(/\b(ul|vpw)_[A-Za-z0-9_-]+/g, REDACTED)
    .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${REDACTED}`)
    .replace(/(\/\/)[^/\s:@]+:[^/\s@]+@/g, `$1${REDACTED}@`);
  // The longest first, so a work dir inside another configured path is not cut short.
  for (const dir of [...workDirs].sort((a, b) => b.length - a.length)) {
    const root = escapeRegExp(dir.replace(/\/+$/, ''));
    // `<dir>/x` → `x`, `<dir>` alone → `.`; not where the dir is only the end of a longer path.
    text = text.replace(new RegExp(`(?<!${PATH_CHAR})${root}(?:/|(?!${PATH_CHAR}))`, 'g'), (match) =>
      match.endsWith('/') ? '' : '.',
    );
  }
  text = text.replace(ABSOLUTE_PATH, (path) => path.replace(/\/+$/, '').split('/').at(-1) || path);
  return text.length > MAX_CAUSE_CHARS ? `${text.slice(0, MAX_CAUSE_CHARS - 1)}…` : text;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
