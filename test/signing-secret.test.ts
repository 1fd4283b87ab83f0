// The generated signing secret (SIGNING_SECRET unset) when replicas on one data dir start together: each process
// creates it at the same instant, and all of them end with the same whole secret; none fails for having lost the race.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PROCESSES = 3;
const ROUNDS = 40;

/** Each round: a fresh data dir and an instant at which every process resolves its secret (spinning until then). */
const CREATOR = `
import { resolveSigningSecret } from '@vp/config';
const rounds = JSON.parse(process.env.ROUNDS);
const now = () => performance.timeOrigin + performance.now();
const answers = [];
for (const { dir, at } of rounds) {
  while (now() < at);
  try {
    answers.push(resolveSigningSecret({ dataDir: dir, signingSecret: undefined }));
  } catch (error) {
    answers.push('failed: ' + error.message);
  }
}
console.log(JSON.stringify(answers));
`;

function creator(rounds: Array<{ dir: string; at: number }>): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CREATOR], {
      cwd: ROOT,
      env: { ...process.env, ROUNDS: JSON.stringify(rounds) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(stdout) as string[])
        : reject(new Error(`creator exited with ${code}: ${stdout}`)),
    );
  });
}

t.test('processes creating the signing secret at once all get the same one', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vp-signing-secret-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const start = Date.now() + 4000;
  const rounds = Array.from({ length: ROUNDS }, (_, i) => ({
    dir: join(root, `replica-dir-${i}`),
    at: start + i * 25,
  }));
  const answers = await Promise.all(Array.from({ length: PROCESSES }, () => creator(rounds)));
  rounds.forEach(({ dir }, i) => {
    const kept = readFileSync(join(dir, 'signing-secret'), 'utf8');
    t.match(kept, /^[0-9a-f]{64}$/, `round ${i}: one whole secret is kept`);
    t.strictSame(
      answers.map((answer) => answer[i]),
      Array(PROCESSES).fill(kept),
      `round ${i}: every process has it`,
    );
    t.strictSame(readdirSync(dir), ['signing-secret'], `round ${i}: nothing else is left`);
  });
});
