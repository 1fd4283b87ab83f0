import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkerConfig } from './config.ts';
import { DockerRuntime } from './runtimes/docker-runtime.ts';
import { ProcessRuntime, agentEnvironment } from './runtimes/process-runtime.ts';
import type { JobRuntime } from './runtimes/runtime.ts';

/** The runtime the config names: Docker containers, or plain processes in the configured Python environment. */
export function runtimeFromConfig(config: WorkerConfig): JobRuntime {
  if (config.runtime === 'docker') {
    // Without an enrolled host id the key's public prefix still tells this agent's containers from others'.
    return new DockerRuntime({
      workRoot: config.workDir,
      host: config.hostId ?? config.workerKey.slice(0, 12),
      defaultImage: config.trainerImage,
      inferenceImage: config.inferenceImage,
    });
  }
  // Agents before per-job homes shared one copy of the trainer's settings here, every workspace's datasets cached in it.
  rmSync(join(config.workDir, '.yolo-config'), { recursive: true, force: true });
  const environment = agentEnvironment();
  if (config.processVenv) {
    environment.VIRTUAL_ENV = config.processVenv;
    environment.PATH = `${join(config.processVenv, 'bin')}:${environment.PATH ?? '/usr/bin:/bin'}`;
  }
  return new ProcessRuntime({ workRoot: config.workDir, environment, venv: config.processVenv });
}
