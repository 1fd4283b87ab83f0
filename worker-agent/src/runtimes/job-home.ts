// Each process-runtime job gets a home of its own inside its work dir: HOME, TMPDIR and the caches, and ultralytics'
// settings (YOLO_CONFIG_DIR). The trainer environment keeps its settings in the venv (<venv>/yolo-config, written by
// installer/trainer/setup-env.sh: offline, integrations off, fonts); a job gets a copy of them whose dataset and
// weights folders are its own. Nothing a job downloads or writes there (a workspace's dataset, a weights file, which
// torch may unpickle) is left where the next job, maybe another workspace's, would read it.
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Under the job's work dir: its own home, settings and caches. */
export const JOB_HOME = '.home';

/** Creates the job's home under `jobDir` and returns the environment that points the job at it. */
export function jobHomeEnvironment(jobDir: string, venv: string | undefined): Record<string, string> {
  const home = join(jobDir, JOB_HOME);
  const config = join(home, 'yolo-config');
  const tmp = join(home, 'tmp');
  for (const dir of [join(config, 'Ultralytics'), tmp]) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const shared = venv && join(venv, 'yolo-config');
  const settingsFile = shared && join(shared, 'Ultralytics', 'settings.json');
  if (shared && settingsFile && existsSync(settingsFile)) {
    // Fonts and matplotlib's font cache come along; the shared dataset and weights caches never do.
    cpSync(shared, config, {
      recursive: true,
      force: false,
      filter: (source) => !/\/(datasets|weights)$/.test(source),
    });
    const settings = {
      ...(JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>),
      datasets_dir: join(config, 'datasets'),
      weights_dir: join(config, 'weights'),
    };
    writeFileSync(join(config, 'Ultralytics', 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
  }
  return {
    HOME: home,
    TMPDIR: tmp,
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_CONFIG_HOME: join(home, '.config'),
    YOLO_CONFIG_DIR: config,
    MPLCONFIGDIR: join(config, 'matplotlib'),
  };
}
