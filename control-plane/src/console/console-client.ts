// The console's typed API client is generated from the committed OpenAPI document:
// `node console-client.ts` writes console/src/api/schema.d.ts; `--check` fails when that file is stale.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONSOLE_DIR } from './console-build.ts';

const DOCUMENT = fileURLToPath(new URL('../../openapi.json', import.meta.url));
const SCHEMA = join(CONSOLE_DIR, 'src/api/schema.d.ts');

function generate(target: string): void {
  // Wherever npm placed it (console/node_modules or hoisted to the root).
  const cli = join(
    dirname(createRequire(join(CONSOLE_DIR, 'package.json')).resolve('openapi-typescript/package.json')),
    'bin/cli.js',
  );
  execFileSync(process.execPath, [cli, DOCUMENT, '-o', target], { stdio: 'ignore' });
}

if (process.argv.includes('--check')) {
  const dir = mkdtempSync(join(tmpdir(), 'vp-console-client-'));
  try {
    generate(join(dir, 'schema.d.ts'));
    if (readFileSync(join(dir, 'schema.d.ts'), 'utf8') !== readFileSync(SCHEMA, 'utf8')) {
      console.error('console/src/api/schema.d.ts is stale: run `npm run client -w console` and commit it');
      process.exitCode = 1;
    } else {
      console.log('console/src/api/schema.d.ts matches control-plane/openapi.json');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else {
  generate(SCHEMA);
}
