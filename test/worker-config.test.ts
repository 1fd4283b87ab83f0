// The worker agent's settings: the JSON file `vp-worker enroll` writes, environment overrides on top, and
// every problem reported together, naming the variable or file key it came from.
import { homedir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { WorkerConfigError, configPath, loadWorkerConfig } from '../worker-agent/src/config.ts';

type Fixtures = Pick<typeof t, 'testdir'>;

/** A config file in the test's fixture directory, and the env that points at it. */
const withFile = (t: Fixtures, content: unknown) => {
  const dir = t.testdir({ 'config.json': typeof content === 'string' ? content : JSON.stringify(content) });
  return { VP_WORKER_CONFIG: join(dir, 'config.json') };
};

/** The ConfigError message of loading `env`, or undefined when it loads. */
const loadError = (env: Record<string, string | undefined>) => {
  try {
    loadWorkerConfig(env);
  } catch (error) {
    return error instanceof WorkerConfigError ? error.message : `not a WorkerConfigError: ${String(error)}`;
  }
  return undefined;
};

t.test('the file enroll writes is enough; the rest has defaults', async (t) => {
  const env = withFile(t, { server: 'https://vision.example.com/', workerKey: 'vpw_secret' });
  t.same(loadWorkerConfig(env), {
    server: 'https://vision.example.com',
    workerKey: 'vpw_secret',
    workDir: join(homedir(), '.local', 'share', 'vp-worker'),
    runtime: 'docker',
    trainerImage: undefined,
    inferenceImage: 'vp-inference:latest',
    serviceHost: undefined,
    maxConcurrentJobs: undefined,
    keepWorkDirsHours: 24,
    sharedFolders: [],
    allowSharedProcessRuntime: false,
    metricsListen: undefined,
    configFile: env.VP_WORKER_CONFIG,
  });
});

t.test('every setting from the file, and keys enroll may add are kept out of the way', async (t) => {
  const env = withFile(t, {
    server: 'http://10.0.0.5:3000',
    workerKey: 'k',
    workDir: '/srv/vp-worker',
    runtime: 'process',
    trainerImage: 'vp-trainer:2',
    maxConcurrentJobs: 4,
    processVenv: '/opt/vp-trainer',
    hostId: 'h-1',
    keepWorkDirsHours: 0,
    sharedFolders: ['/data/images', '/mnt/nas/photos/'],
    // As install-worker.sh --allow-shared-process-runtime writes it.
    allowSharedProcessRuntime: 'true',
    hostName: 'gpu-01',
  });
  t.match(loadWorkerConfig(env), {
    server: 'http://10.0.0.5:3000',
    workDir: '/srv/vp-worker',
    runtime: 'process',
    trainerImage: 'vp-trainer:2',
    maxConcurrentJobs: 4,
    processVenv: '/opt/vp-trainer',
    hostId: 'h-1',
    hostName: 'gpu-01',
    keepWorkDirsHours: 0,
    sharedFolders: ['/data/images', '/mnt/nas/photos'],
    allowSharedProcessRuntime: true,
  });
});

t.test('environment variables override the file', async (t) => {
  const env = {
    ...withFile(t, { server: 'https://old.example', workerKey: 'old', runtime: 'docker', maxConcurrentJobs: 1 }),
    VP_WORKER_SERVER: 'wss://new.example/ws',
    VP_WORKER_KEY: 'new',
    VP_WORKER_WORK_DIR: 'relative/work',
    VP_WORKER_RUNTIME: 'process',
    VP_WORKER_TRAINER_IMAGE: 'trainer:3',
    VP_WORKER_MAX_CONCURRENT_JOBS: '8',
    VP_WORKER_PROCESS_VENV: 'relative/venv',
    VP_WORKER_KEEP_WORK_DIRS_HOURS: '0.5',
    VP_WORKER_INFERENCE_IMAGE: 'vp-inference:7',
    VP_WORKER_SERVICE_HOST: 'gpu-01.lan',
    VP_WORKER_SHARED_FOLDERS: '/data/a, /data/b/../c,',
    VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME: '1',
  };
  t.match(loadWorkerConfig(env), {
    server: 'wss://new.example/ws',
    workerKey: 'new',
    workDir: join(process.cwd(), 'relative/work'),
    runtime: 'process',
    trainerImage: 'trainer:3',
    maxConcurrentJobs: 8,
    processVenv: join(process.cwd(), 'relative/venv'),
    keepWorkDirsHours: 0.5,
    inferenceImage: 'vp-inference:7',
    serviceHost: 'gpu-01.lan',
    sharedFolders: ['/data/a', '/data/c'],
    allowSharedProcessRuntime: true,
  });
  t.equal(loadWorkerConfig({ ...env, VP_WORKER_KEY: '' }).workerKey, 'old', 'an empty variable does not override');
});

t.test(
  'the config path: VP_WORKER_CONFIG, else $XDG_CONFIG_HOME or ~/.config, then vp-worker/config.json',
  async (t) => {
    t.equal(configPath({}), join(homedir(), '.config', 'vp-worker', 'config.json'));
    t.equal(configPath({ XDG_CONFIG_HOME: '/cfg' }), '/cfg/vp-worker/config.json');
    t.equal(configPath({ VP_WORKER_CONFIG: '/etc/vp-worker.json', XDG_CONFIG_HOME: '/cfg' }), '/etc/vp-worker.json');
  },
);

t.test('every problem is reported together, named by where it came from', async (t) => {
  const env = {
    ...withFile(t, { server: 'ftp://files.example', runtime: 'kubernetes' }),
    VP_WORKER_MAX_CONCURRENT_JOBS: 'many',
  };
  const message = loadError(env);
  t.match(message, /^Invalid configuration: /);
  t.match(message, `server (in ${env.VP_WORKER_CONFIG}) must be an http(s) or ws(s) URL`);
  t.match(message, /workerKey \(in .*\) is missing; run `vp-worker enroll --server URL --token T` first/);
  t.match(message, /runtime \(in .*\) must be one of docker, process/);
  t.match(message, /VP_WORKER_MAX_CONCURRENT_JOBS must be a positive integer/);
  t.match(
    loadError({ ...env, VP_WORKER_KEEP_WORK_DIRS_HOURS: '-1' }),
    /VP_WORKER_KEEP_WORK_DIRS_HOURS must be 0 or more/,
  );
  t.match(
    loadError({ ...env, VP_WORKER_KEEP_WORK_DIRS_HOURS: 'a day' }),
    /VP_WORKER_KEEP_WORK_DIRS_HOURS must be a number of hours, 0 or more/,
  );
  t.match(
    loadError({ ...env, VP_WORKER_SERVICE_HOST: 'http://gpu-01/' }),
    /VP_WORKER_SERVICE_HOST must be a host name or an IP address/,
  );
  t.match(
    loadError({ ...env, VP_WORKER_SHARED_FOLDERS: '/data/a,data/b' }),
    /VP_WORKER_SHARED_FOLDERS must list absolute paths/,
  );
  t.match(
    loadError({ ...env, VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME: 'yes' }),
    /VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME must be true or false \(1 or 0\)/,
  );
  t.match(
    loadError({ ...env, VP_WORKER_MAX_CONCURRENT_JOBS: '0' }),
    /VP_WORKER_MAX_CONCURRENT_JOBS must be a positive integer$/,
  );
  t.match(
    loadError({ ...withFile(t, { server: 'https://x.example', workerKey: '' }) }),
    /workerKey \(in .*\) must not be empty/,
  );
});

t.test('an unreadable file is refused outright', async (t) => {
  t.match(loadError(withFile(t, '{"server": ')), /^Invalid configuration: .*config\.json is not valid JSON/);
  t.match(loadError(withFile(t, '["server"]')), /must hold a JSON object/);
  t.match(
    loadError({ VP_WORKER_CONFIG: join(t.testdir(), 'missing.json') }),
    /missing\.json \(from VP_WORKER_CONFIG\) does not exist/,
  );
});
