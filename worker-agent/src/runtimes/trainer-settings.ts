// The trainer environment keeps ultralytics' settings in the venv (YOLO_CONFIG_DIR=<venv>/yolo-config, written by
// installer/trainer/setup-env.sh: offline, datasets and weights cached there), owned by whoever built it, usually
// root. Jobs of an agent that runs as another user (install-worker.sh's vp-worker) cannot write there: ultralytics
// then falls back to default settings in /tmp, whose dataset folder is relative to where a job starts, and a later
// training fails with "Permission denied: 'datasets'". Such an agent gives its jobs a copy of those settings in its
// own work dir instead, with the dataset and weights caches beside it.
import { accessSync, constants, cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The environment that points the jobs at settings they can write; empty when the venv's own will do. */
export function trainerSettingsEnvironment(venv: string, workRoot: string): Record<string, string> {
  const shared = join(venv, 'yolo-config');
  const settingsFile = join(shared, 'Ultralytics', 'settings.json');
  if (!existsSync(settingsFile) || writable(shared)) return {};
  const own = join(workRoot, '.yolo-config');
  // Fonts and matplotlib's font cache come along; files copied before are kept.
  cpSync(shared, own, { recursive: true, force: false, filter: (source) => !/\/(datasets|weights)$/.test(source) });
  const settings = { ...(JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>), datasets_dir: join(own, 'datasets'), weights_dir: join(own, 'weights') };
  writeFileSync(join(own, 'Ultralytics', 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
  return { YOLO_CONFIG_DIR: own, MPLCONFIGDIR: join(own, 'matplotlib') };
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
