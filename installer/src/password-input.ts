// `vpctl users password <username>` reads the password from stdin, never from the command line (where `ps` and the
// shell's history would show it): `printf '%s' "$PASSWORD" | vpctl users password alice`.
import { readFileSync } from 'node:fs';
import { Invalid } from '../../control-plane/src/http/errors.ts';

/** All of stdin, without one trailing newline (what `echo` or a here-document adds). */
export function readPasswordFromStdin(): string {
  // A prompt at once on stderr (vpctl's notes wait for the end).
  if (process.stdin.isTTY)
    process.stderr.write('Type the password, then Enter and Ctrl-D (it is shown as typed; pipe it in to hide it):\n');
  const password = readFileSync(0, 'utf8').replace(/\r?\n$/, '');
  if (!password)
    throw Invalid('no password on stdin: pipe it in, e.g. printf "%s" "$PASSWORD" | vpctl users password alice');
  return password;
}
