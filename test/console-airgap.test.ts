// Air-gapped: the appliance (embedded default) and the console in Chromium inside a network namespace with only
// loopback, so any request for an address elsewhere (a font or error-reporting host, say) fails or hangs. The console
// must load, sign in, create a dataset and show it without one. Needs root or user namespaces (CI runs as root).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';

const journey = fileURLToPath(new URL('./helpers/airgap-journey.ts', import.meta.url));

interface Result {
  ok: boolean;
  error?: string;
  outside?: string;
  origin?: string;
  requests?: string[];
  failed?: string[];
  fontsReady?: string;
  journeyMs?: number;
}

t.test('the console works with no network beyond the machine itself', async (t) => {
  const script = `ip link set lo up && exec "${process.execPath}" "${journey}"`;
  const { stdout } = await promisify(execFile)('unshare', ['--net', 'sh', '-c', script], {
    env: process.env,
    maxBuffer: 16 << 20,
    timeout: 300_000,
  });
  const line = stdout.trim().split('\n').at(-1) ?? '';
  const result = JSON.parse(line) as Result;
  t.equal(result.error, undefined, 'the journey ran to its end');
  t.ok(result.ok);
  t.match(result.outside, /ENETUNREACH|EHOSTUNREACH|TimeoutError/, 'nothing outside the machine can be reached');
  const foreign = (result.requests ?? []).filter((url) => new URL(url).origin !== result.origin);
  t.same(foreign, [], 'the console asked for no address but the appliance’s');
  t.same(result.failed, [], 'no request failed');
  t.equal(result.fontsReady, 'loaded', 'fonts settled (system fonts only)');
  // A hang on a resource from elsewhere would end the journey's waits (20 s each) in an error, failing the first check.
  t.comment(`sign-in to a created dataset: ${result.journeyMs} ms; outside: ${result.outside}`);
});
