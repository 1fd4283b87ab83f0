// The Docker engine the Docker runtime tests run against, and the image their jobs use. No registry can be
// reached from CI, so the image is built here: the host's statically linked busybox (Debian's busybox-static,
// which .ci/run installs) and a few applet links, imported as `vp-test/busybox:<hash of both>`; an image of that
// tag already present is reused.
import Docker from 'dockerode';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureJobNetwork, JOB_NETWORK } from '../../worker-agent/src/runtimes/docker-runtime.ts';

export const DOCKER_SOCKET = '/var/run/docker.sock';
const STARTUP_MS = 60_000;
const REPOSITORY = 'vp-test/busybox';
const APPLETS = ['sh', 'echo', 'sleep', 'cat', 'pwd', 'dd', 'true'];

/** A client of a running Docker engine, and the tag of the test image in it. Throws, saying why, when there can be neither. */
export async function dockerForTests(): Promise<{ docker: Docker; image: string }> {
  const docker = new Docker({ socketPath: DOCKER_SOCKET });
  await ensureEngine(docker);
  return { docker, image: await testImage(docker) };
}

/** Throws, saying how to build it, when `image` (built locally by `script`, never pulled) is not in the engine. */
export async function requireLocalImage(docker: Docker, image: string, script: string): Promise<void> {
  await docker
    .getImage(image)
    .inspect()
    .catch(() => {
      throw new Error(`no image ${image}: run ${script} as root (.ci/run does)`);
    });
}

/**
 * The address job containers reach this machine at (its loopback they cannot): this machine's side of the jobs'
 * bridge (its gateway), created here when missing, so test traffic stays on the bridge the tests' engine made.
 */
export async function addressForContainers(docker: Docker): Promise<string> {
  await ensureJobNetwork(docker);
  const network = (await docker.getNetwork(JOB_NETWORK).inspect()) as {
    IPAM?: { Config?: Array<{ Gateway?: string }> };
  };
  const gateway = network.IPAM?.Config?.find((config) => config.Gateway)?.Gateway;
  if (!gateway)
    throw new Error(`the Docker network ${JOB_NETWORK} has no gateway address for containers to reach this machine at`);
  return gateway;
}

async function reachable(docker: Docker): Promise<boolean> {
  return docker.ping().then(
    () => true,
    () => false,
  );
}

/** Starts dockerd when nothing answers on the socket; it is left running for later tests, as a CI service would be. */
async function ensureEngine(docker: Docker): Promise<void> {
  if (await reachable(docker)) return;
  const log = join(mkdtempSync(join(tmpdir(), 'vp-dockerd-')), 'dockerd.log');
  const output = openSync(log, 'w');
  const dockerd = spawn('dockerd', [], { detached: true, stdio: ['ignore', output, output] });
  closeSync(output);
  dockerd.unref();
  let failure: string | undefined;
  dockerd.once('error', (error) => (failure = error.message));
  dockerd.once('exit', (code) => (failure ??= `dockerd exited with status ${code}`));
  const deadline = Date.now() + STARTUP_MS;
  while (failure === undefined && Date.now() < deadline) {
    if (await reachable(docker)) return;
    await sleep(250);
  }
  // Another process may have started an engine while this one lost the race for its pid file.
  if (await reachable(docker)) return;
  throw new Error(
    `no Docker engine at ${DOCKER_SOCKET} and dockerd did not start (${failure ?? `not up after ${STARTUP_MS / 1000} s`}; ` +
      `it needs root and the docker.io package, which .ci/run installs). Its log, ${log}:\n${readFileSync(log, 'utf8').slice(-2000)}`,
  );
}

async function testImage(docker: Docker): Promise<string> {
  const busybox = staticBusybox();
  const tag = createHash('sha256').update(busybox).update(APPLETS.join(' ')).digest('hex').slice(0, 16);
  const image = `${REPOSITORY}:${tag}`;
  const present = await docker
    .getImage(image)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (present) return image;
  const root = mkdtempSync(join(tmpdir(), 'vp-test-image-'));
  try {
    mkdirSync(join(root, 'bin'));
    writeFileSync(join(root, 'bin', 'busybox'), busybox, { mode: 0o755 });
    for (const applet of APPLETS) symlinkSync('busybox', join(root, 'bin', applet));
    mkdirSync(join(root, 'tmp'));
    chmodSync(join(root, 'tmp'), 0o1777);
    const tar = spawn('tar', ['-C', root, '--owner=0', '--group=0', '--numeric-owner', '-c', '.'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const progress = await docker.importImage(tar.stdout, { repo: REPOSITORY, tag });
    await new Promise<void>((done, fail) =>
      docker.modem.followProgress(progress, (error) => (error ? fail(error) : done())),
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return image;
}

/** The busybox on PATH, if it needs no shared libraries (an image with nothing else in it could not run it otherwise). */
function staticBusybox(): Buffer {
  const path = (process.env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, 'busybox'))
    .find((file) => existsSync(file));
  const binary = path === undefined ? undefined : readFileSync(path);
  if (binary === undefined || !isStaticElf(binary)) {
    throw new Error(
      `the Docker tests build their image from a statically linked busybox (found: ${path ?? 'none'}): apt-get install busybox-static (.ci/run does)`,
    );
  }
  return binary;
}

/** A dynamically linked ELF file names its loader in a PT_INTERP program header. 64-bit little-endian (x86-64, arm64). */
function isStaticElf(file: Buffer): boolean {
  if (file.readUInt32BE(0) !== 0x7f454c46 || file[4] !== 2 || file[5] !== 1) return false;
  const offset = Number(file.readBigUInt64LE(0x20));
  const size = file.readUInt16LE(0x36);
  const PT_INTERP = 3;
  for (let i = 0; i < file.readUInt16LE(0x38); i++)
    if (file.readUInt32LE(offset + i * size) === PT_INTERP) return false;
  return true;
}
