// Writes control-plane/openapi.json from the route definitions; with --check, fails when the committed copy drifts.
import { readFileSync, writeFileSync } from 'node:fs';
import { openApiDocument } from './app.ts';

const file = new URL('../openapi.json', import.meta.url);
const document = openApiDocument();
if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(file, 'utf8');
  } catch {
    // missing counts as drift
  }
  if (committed !== document) {
    console.error('control-plane/openapi.json is out of date with the routes: run `npm run openapi` and commit it.');
    process.exit(1);
  }
  console.log('control-plane/openapi.json matches the routes.');
} else {
  writeFileSync(file, document);
  console.log('wrote control-plane/openapi.json');
}
