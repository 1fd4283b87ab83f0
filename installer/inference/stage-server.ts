// Lays out what the inference image runs, in a directory (argv[2]): the repo's packages the server needs
// (@vp/inference-server, @vp/inference, @vp/config: their sources, which Node runs as TypeScript outside node_modules)
// and, in node_modules, the closure of their npm dependencies as this checkout installed them (the Linux x64 builds of
// the native ones only). Usage: node installer/inference/stage-server.ts <dir>
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '../..');
const out = resolve(process.argv[2] ?? '');
const WORKSPACES: Record<string, string> = { '@vp/inference-server': 'inference-server', '@vp/inference': 'inference', '@vp/config': 'config' };
/** Other platforms' native builds, which a Linux x64 container never loads. */
const FOREIGN = /\/bin\/napi-v\d+\/(darwin|win32|linux\/arm64)(\/|$)/;

interface Manifest {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const manifest = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;

/** Where Node would find `name` from `dir`: the nearest node_modules up the tree. */
function installed(name: string, dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const candidate = join(at, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (at === repo || at === dirname(at)) return undefined;
  }
}

mkdirSync(join(out, 'node_modules', '@vp'), { recursive: true });
writeFileSync(join(out, 'package.json'), '{ "private": true, "type": "module" }\n');
const seen = new Set<string>();
const queue: Array<{ name: string; from: string; optional: boolean }> = [{ name: '@vp/inference-server', from: repo, optional: false }];
while (queue.length > 0) {
  const { name, from, optional } = queue.shift()!;
  const workspace = WORKSPACES[name];
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
    for (const part of ['package.json', 'src']) cpSync(join(source, part), join(out, workspace, part), { recursive: true });
    symlinkSync(`../../${workspace}`, join(out, 'node_modules', name));
  }
  const { dependencies = {}, optionalDependencies = {} } = manifest(source);
  for (const dependency of Object.keys(dependencies)) queue.push({ name: dependency, from: source, optional: false });
  for (const dependency of Object.keys(optionalDependencies)) queue.push({ name: dependency, from: source, optional: true });
}
console.log(`staged ${seen.size} packages in ${out}`);
