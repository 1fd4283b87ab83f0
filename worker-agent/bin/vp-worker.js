#!/usr/bin/env node
// `vp-worker`: runs the TypeScript source directly (Node 24 strips types, but not under node_modules).
// Resolved from this file's real location, so it works through the node_modules/.bin symlink too.
import { realpathSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = pathToFileURL(realpathSync(fileURLToPath(import.meta.url)));
await import(new URL('../src/main.ts', here).href);
