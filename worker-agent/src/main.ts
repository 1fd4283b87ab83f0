// vp-worker: the agent's command line: `enroll` once, then `run` (as a service) to connect and work; `check` asks
// whether the control plane still takes the enrolled key.
import { parseArgs } from 'node:util';
import { configPath as defaultConfigPath, loadWorkerConfig } from './config.ts';
import type { Server } from 'node:http';
import { AgentMetrics } from './agent-metrics.ts';
import { AGENT_VERSION, WorkerConnection, type ConnectionOutcome } from './connection.ts';
import { enroll } from './enroll.ts';
import { FolderRequests } from './folder-requests.ts';
import { SharedFolders } from './shared-folders.ts';
import { keepProbingExporters } from './exporter-probe.ts';
import { JobManager } from './job-manager.ts';
import { checkWorkerKey, reenrollAdvice } from './key-check.ts';
import { jsonLinesLogger, type Logger } from './log.ts';
import { runtimeFromConfig } from './runtime-from-config.ts';
import type { JobRuntime, ServiceKind } from './runtimes/runtime.ts';
import { WorkDirRetention } from './work-dir-retention.ts';

const USAGE = [
  'usage: vp-worker enroll --server URL --token TOKEN [--config PATH]',
  '       vp-worker run [--config PATH]',
  '       vp-worker check [--config PATH]   (exit 0: the control plane takes the worker key; 3: it refuses it)',
  '(config default: VP_WORKER_CONFIG, else ~/.config/vp-worker/config.json)',
].join('\n');

/**
 * Exit statuses: 0 done, 1 failed, 2 usage error, 3 the control plane refused the worker key, 4 it does not
 * speak this agent's protocol version, 5 another agent took over this host's key, 6 the host is in the appliance-wide
 * pool and the process runtime was not allowed there (allowSharedProcessRuntime). 3-6 are permanent until an operator
 * acts (re-enroll, upgrade, stop the other agent, choose a runtime), so a service manager should not restart on them
 * (systemd: RestartPreventExitStatus=3 4 5 6).
 */
const EXIT_STATUS: Record<ConnectionOutcome, number> = {
  stopped: 0,
  unauthorized: 3,
  unsupported: 4,
  replaced: 5,
  sharedProcessRuntime: 6,
};

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        server: { type: 'string' },
        token: { type: 'string' },
        config: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    console.error(`vp-worker: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length === 1 && positionals[0] === 'run' && !values.server && !values.token)
    return run(values.config);
  if (positionals.length === 1 && positionals[0] === 'check' && !values.server && !values.token)
    return check(values.config);
  if (positionals.length !== 1 || positionals[0] !== 'enroll' || !values.server || !values.token) {
    console.error(USAGE);
    return 2;
  }
  const configPath = values.config ?? defaultConfigPath();
  try {
    const host = await enroll({ server: values.server, token: values.token, configPath });
    console.log(`Enrolled as host ${host.name}; worker key saved to ${configPath}`);
    return 0;
  } catch (error) {
    console.error(`vp-worker: ${(error as Error).message}`);
    return 1;
  }
}

/**
 * Recovers what an earlier agent process left running, then connects to the control plane and runs what it
 * assigns, until SIGINT or SIGTERM (a clean close; jobs keep running, to be adopted after a restart, whatever the
 * runtime) or until the key is refused (then every job is stopped: the host is no longer this platform's).
 */
async function run(configFile: string | undefined): Promise<number> {
  const log = jsonLinesLogger();
  let connection: WorkerConnection;
  let jobs: JobManager;
  let metrics: AgentMetrics;
  let metricsServer: Server | undefined;
  let probing: { stop(): void } | undefined;
  try {
    const config = loadWorkerConfig(configFile ? { ...process.env, VP_WORKER_CONFIG: configFile } : process.env);
    connection = new WorkerConnection(config, log);
    metrics = new AgentMetrics(AGENT_VERSION, {
      connected: () => connection.state === 'ready',
      jobsRunning: () => jobs.running,
    });
    const counted = metrics;
    const files = {
      server: config.server.replace(/^ws/, 'http'),
      workerKey: config.workerKey,
      workRoot: config.workDir,
      log,
      onRetry: () => (counted.uploadRetries += 1),
    };
    const retention = new WorkDirRetention({
      workRoot: config.workDir,
      keepMs: config.keepWorkDirsHours * 3_600_000,
      log,
      inUse: () => jobs.workDirs(),
    });
    const runtime = runtimeFromConfig(config);
    // The agent connects (and adopts its jobs) while the probe runs; each of its answers follows the welcome.
    const services = serviceKinds(runtime, log);
    probing = keepProbingExporters(
      () => runtime.runExporterProbe(),
      log,
      (formats) => void services.then((kinds) => connection.setCapabilities({ ...formats, services: kinds })),
    );
    const serviceHost = () => config.serviceHost ?? connection.localAddress;
    jobs = new JobManager(runtime, log, (message) => connection.send(message), {
      files,
      retention,
      serviceHost,
      onRecovered: () => (counted.jobsRecovered += 1),
    });
    let wasReady = false;
    connection.on('state', (state) => {
      if (wasReady && state !== 'ready') counted.disconnects += 1;
      wasReady = state === 'ready';
    });
    if (config.metricsListen) {
      metricsServer = await metrics.serve(config.metricsListen);
      log('info', 'serving the agent metrics', { listen: config.metricsListen });
    }
    connection.setJobs(jobs);
    connection.setFolders(
      new FolderRequests(new SharedFolders(config.sharedFolders), log, (message) => connection.send(message)),
    );
    if (config.sharedFolders.length)
      log('info', 'sharing folders with the control plane, read-only', { folders: config.sharedFolders });
    await jobs.recover();
    retention.start();
  } catch (error) {
    console.error(`vp-worker: ${(error as Error).message}`);
    return 1;
  }
  const stop = (signal: string) => {
    log('info', 'stopping', { signal });
    // First, so no output is read that the closing socket could not take: the next agent sends it.
    jobs.detachAll();
    void connection.stop();
  };
  process.once('SIGINT', stop).once('SIGTERM', stop);
  try {
    const outcome = await connection.run();
    if (outcome === 'unauthorized' || outcome === 'replaced') await jobs.stopAll(`the agent stopped: ${outcome}`);
    return EXIT_STATUS[outcome];
  } catch (error) {
    log('error', 'the agent failed', { error: (error as Error).message });
    return 1;
  } finally {
    process.off('SIGINT', stop).off('SIGTERM', stop);
    metricsServer?.close();
    probing?.stop();
  }
}

/** Asks the control plane whether it takes the configured worker key, without connecting as the agent (install-worker.sh does). */
async function check(configFile: string | undefined): Promise<number> {
  try {
    const config = loadWorkerConfig(configFile ? { ...process.env, VP_WORKER_CONFIG: configFile } : process.env);
    const host = config.hostName ? `host ${config.hostName}` : 'this host';
    if ((await checkWorkerKey(config.server, config.workerKey)) === 'accepted') {
      console.log(`${config.server} accepts the worker key of ${host} (${config.configFile})`);
      return 0;
    }
    console.error(
      `vp-worker: ${config.server} refuses the worker key of ${host} (${config.configFile}): ${reenrollAdvice(config)}`,
    );
    return EXIT_STATUS.unauthorized;
  } catch (error) {
    console.error(`vp-worker: cannot check the worker key: ${(error as Error).message}`);
    return 1;
  }
}

/** What the runtime can serve; none when it cannot tell (Docker down), logged. */
async function serviceKinds(runtime: JobRuntime, log: Logger): Promise<ServiceKind[]> {
  try {
    return await runtime.services();
  } catch (error) {
    log('warn', 'no services: the runtime could not tell which it runs', { error: (error as Error).message });
    return [];
  }
}

process.exitCode = await main(process.argv.slice(2));
