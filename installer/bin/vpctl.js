#!/usr/bin/env node
// `npx vpctl`: runs the TypeScript source directly (Node 24 strips types). Resolved from this file's
// real location, so it works through the node_modules/.bin symlink too.
import { realpathSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = pathToFileURL(realpathSync(fileURLToPath(import.meta.url)));
await import(new URL('../src/vpctl.ts', here).href);
