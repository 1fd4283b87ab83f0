// Lays out what one of this repo's packages runs, in a directory, as a production install of it would, without npm:
// the repo's packages it needs (their package.json and src, which Node runs as TypeScript outside node_modules, linked
// from node_modules/@vp) and, in node_modules, the closure of their npm dependencies as this checkout installed them
// (the Linux x64 builds of the native ones only). Nothing a package lists only in devDependencies comes along.
// Usage: node installer/stage-packages.ts <package, e.g. @vp/inference-server> <dir>
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const [root, outArgument] = process.argv.slice(2);
if (!root || !outArgument) {
  console.error('usage: node installer/stage-packages.ts <package> <dir>');
  process.exit(2);
}
const out = resolve(outArgument);
/** Other platforms' native builds, which a Linux x64 host never loads. */
const FOREIGN = /\/bin\/napi-v\d+\/(darwin|win32|linux\/arm64)(\/|$)/;

interface Manifest {
  name?: string;
  workspaces?: string[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const manifest = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
/** The repo's own packages by name: the root manifest's workspaces. */
const workspaces = new Map(
  (manifest(repo).workspaces ?? []).map((folder) => [manifest(join(repo, folder)).name, folder]),
);

/** Where Node would find `name` from `dir`: the nearest node_modules up the tree. */
function installed(name: string, dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const candidate = join(at, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (at === repo || at === dirname(at)) return undefined;
  }
}

if (!workspaces.has(root))
  throw new Error(`${root} is not one of this repo's packages (${[...workspaces.keys()].join(', ')})`);
mkdirSync(join(out, 'node_modules', '@vp'), { recursive: true });
writeFileSync(join(out, 'package.json'), '{ "private": true, "type": "module" }\n');
const seen = new Set<string>();
const queue: Array<{ name: string; from: string; optional: boolean }> = [{ name: root, from: repo, optional: false }];
while (queue.length > 0) {
  const { name, from, optional } = queue.shift()!;
  const workspace = workspaces.get(name);
  const source = workspace === undefined ? installed(name, from) : join(repo, workspace);
  if (source === undefined) {
    if (optional) continue; // another platform's build
    throw new Error(`${name} (needed from ${from}) is not installed: run npm ci first`);
  }
  if (seen.has(source)) continue;
  seen.add(source);
  if (workspace === undefined) {
    cpSync(source, join(out, source.slice(repo.length)), { recursive: true, filter: (path) => !FOREIGN.test(path) });
  } else {
    for (const part of ['package.json', 'src'])
      cpSync(join(source, part), join(out, workspace, part), { recursive: true });
    symlinkSync(`../../${workspace}`, join(out, 'node_modules', name));
  }
  const { dependencies = {}, optionalDependencies = {} } = manifest(source);
  for (const dependency of Object.keys(dependencies)) queue.push({ name: dependency, from: source, optional: false });
  for (const dependency of Object.keys(optionalDependencies))
    queue.push({ name: dependency, from: source, optional: true });
}
console.log(`staged ${root}: ${seen.size} packages in ${out}`);
