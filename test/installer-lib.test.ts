// The installers' shell functions, sourced as install.sh and install-worker.sh source them: the host checks they share
// (installer/lib/host-checks.sh) on a PCI tree of the test's own, install.sh listing them from its bundle's app.tar,
// and the background control plane of installer/appliance/lib.sh: its pid, its log rotated at the bound while a real
// process writes, and no writer left once it is stopped. (test/install.test.ts installs a real bundle as root.)
import { createServer } from 'node:net';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { runProgram } from './helpers/run-node.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'vp-installer-lib-'));
t.teardown(() => {
  // Should a test fail half-way, what it started from its directory (a control plane, a log writer) goes with it.
  for (const pid of processes(`${dir}/`)) process.kill(Number(pid), 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** The pids of the processes whose command line holds `text`. */
function processes(text: string): string[] {
  return readdirSync('/proc').filter((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
    } catch {
      return false; // ended meanwhile
    }
  });
}

/** An executable shell script at `path`. */
function script(path: string, body: string): void {
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
}

/** /sys/bus/pci/devices of a host with two NVIDIA GPUs (a display and a 3D controller), their audio and an Intel GPU. */
const pci = join(dir, 'pci');
for (const [address, vendor, pciClass] of [
  ['0000:00:02.0', '0x8086', '0x030000'],
  ['0000:01:00.0', '0x10de', '0x030000'],
  ['0000:01:00.1', '0x10de', '0x040300'],
  ['0000:41:00.0', '0x10de', '0x030200'],
]) {
  mkdirSync(join(pci, address!), { recursive: true });
  writeFileSync(join(pci, address!, 'vendor'), `${vendor}\n`);
  writeFileSync(join(pci, address!, 'class'), `${pciClass}\n`);
}
// What a host with the NVIDIA driver and container toolkit has on its PATH, as far as the checks look.
const nvidia = join(dir, 'nvidia-bin');
mkdirSync(nvidia);
script(
  join(nvidia, 'nvidia-smi'),
  `[ "$*" = '--query-gpu=driver_version --format=csv,noheader' ] || exit 2\necho 550.54.14\necho 550.54.14`,
);
script(join(nvidia, 'nvidia-container-runtime-hook'), 'exit 0');
const empty = join(dir, 'empty-bin');
mkdirSync(empty);

/** Runs bash `code` with host-checks.sh sourced; its stdout, or its exit status when it failed. */
async function hostCheck(code: string, env: Record<string, string> = {}): Promise<string | number | null> {
  const run = await runProgram(
    '/bin/bash',
    ['-c', `set -euo pipefail; source installer/lib/host-checks.sh; ${code}`],
    env,
  );
  return run.code === 0 ? run.stdout : run.code;
}

t.test('host checks: GPUs on the PCI bus, the driver, the container toolkit, Docker, the architecture', async (t) => {
  const system = { PATH: '/usr/bin:/bin' };
  t.equal(
    await hostCheck('nvidia_gpu_count', { ...system, VP_PCI_DEVICES: pci }),
    '2\n',
    "NVIDIA's display and 3D controllers, not its audio, not Intel's",
  );
  t.equal(await hostCheck('nvidia_gpu_count', { ...system, VP_PCI_DEVICES: empty }), '0\n');

  t.equal(
    await hostCheck('nvidia_driver', { PATH: `${nvidia}:/usr/bin:/bin` }),
    '550.54.14 2\n',
    'the version and the GPUs it runs',
  );
  t.equal(await hostCheck('nvidia_driver', { PATH: empty }), 1, 'no nvidia-smi: no driver');
  script(
    join(dir, 'nvidia-smi'),
    'echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."; exit 9',
  );
  t.equal(await hostCheck('nvidia_driver', { PATH: `${dir}:/usr/bin:/bin` }), 1, 'an nvidia-smi that fails: no driver');

  t.equal(await hostCheck('nvidia_container_toolkit', { PATH: nvidia }), '');
  t.equal(await hostCheck('nvidia_container_toolkit', { PATH: empty }), 1);

  t.equal(await hostCheck('docker_engine_state'), 'running\n', "this machine's engine (the tests need one)");
  t.equal(
    await hostCheck('docker_engine_state', { DOCKER_HOST: `unix://${dir}/no-docker.sock` }),
    'stopped\n',
    'an engine that does not answer',
  );
  t.equal(await hostCheck('docker_engine_state', { PATH: empty }), 'missing\n');

  t.equal(await hostCheck('host_arch'), `${arch()}\n`, "Node's name of this CPU, as bundles are named");
});

t.test('install.sh lists the shared checks from its bundle and stops before any change when one fails', async (t) => {
  // A bundle that can get no further than the host checks: built for another CPU, its port taken.
  const bundle = join(dir, 'bundle');
  mkdirSync(bundle);
  copyFileSync(join(ROOT, 'installer/install.sh'), join(bundle, 'install.sh'));
  writeFileSync(
    join(bundle, 'manifest.json'),
    '{\n  "version": "0.0.0-checks",\n  "arch": "riscv64",\n  "lastMigration": "none",\n  "members": []\n}\n',
  );
  const packed = await runProgram('bash', [
    '-c',
    `tar -cf "${bundle}/app.tar" ./installer/appliance/lib.sh ./installer/lib/host-checks.sh && cd "${bundle}" && sha256sum app.tar manifest.json >SHA256SUMS`,
  ]);
  t.equal(packed.code, 0, packed.stderr);
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => busy.close());
  const port = (busy.address() as { port: number }).port;

  // install.sh wants root: where the tests do not run as root, a user namespace's root runs it.
  const asRoot = process.getuid?.() === 0 ? [] : ['unshare', '--map-root-user'];
  const [program, ...args] = [...asRoot, join(bundle, 'install.sh'), '--port', String(port)];
  const run = await runProgram(program!, args, { VP_PCI_DEVICES: pci, PATH: `${nvidia}:${process.env.PATH}` });
  t.equal(run.code, 1, run.stderr);
  const machine = (await runProgram('uname', ['-m'])).stdout.trim();
  t.match(
    run.stdout,
    `FAIL  CPU architecture: this host is ${machine}, the bundle is for riscv64: build the bundle on an ${arch()} machine`,
  );
  t.match(run.stdout, `FAIL  port ${port} is in use by another program: stop it, or install with --port N`);
  t.match(run.stdout, /^ {2}ok {4}Docker engine \S+$/m);
  t.match(run.stdout, '  ok    NVIDIA driver 550.54.14, 2 GPU(s)\n');
  t.match(
    run.stdout,
    '  ok    NVIDIA container toolkit (nvidia-container-runtime-hook)\n',
    'checked when GPUs and Docker are there',
  );
  t.match(run.stderr, /^install\.sh: \d+ problem\(s\) above \(FAIL\) stop the install; nothing was changed\n$/);

  rmSync(join(nvidia, 'nvidia-container-runtime-hook'));
  const withoutToolkit = await runProgram(program!, args, {
    VP_PCI_DEVICES: pci,
    PATH: `${nvidia}:${process.env.PATH}`,
  });
  t.match(
    withoutToolkit.stdout,
    '  warn  no NVIDIA container toolkit (nvidia-container-runtime-hook): containers get no GPU. Install nvidia-container-toolkit, then: nvidia-ctk runtime configure --runtime=docker && systemctl restart docker\n',
  );
});

t.test(
  'the background control plane: its pid, its log rotated at the bound while it runs, nothing left once stopped',
  async (t) => {
    const BOUND = 65_536;
    const prefix = join(dir, 'opt');
    const logFile = join(dir, 'log/control-plane.log');
    const pidFile = join(dir, 'run/control-plane.pid');
    // A release whose control plane prints 2500 lines of 62 bytes (about 2.4 bounds), then waits for SIGTERM.
    const release = join(prefix, 'releases/r1');
    mkdirSync(join(release, 'bin'), { recursive: true });
    mkdirSync(join(release, 'control-plane/src'), { recursive: true });
    symlinkSync(process.execPath, join(release, 'bin/node'));
    symlinkSync(join(ROOT, 'installer'), join(release, 'installer'));
    writeFileSync(
      join(release, 'control-plane/src/main.ts'),
      `for (let i = 1; i <= 2500; i++) console.log(\`line \${String(i).padStart(5, '0')} \${'x'.repeat(50)}\`);
    console.log(\`written \${process.env.RUN}\`);
    process.on('SIGTERM', () => { console.log(\`stopped \${process.env.RUN}\`); process.exit(0); });
    setInterval(() => {}, 60_000);`,
    );
    const output = (run: string) =>
      [
        ...Array.from({ length: 2500 }, (_, i) => `line ${String(i + 1).padStart(5, '0')} ${'x'.repeat(50)}`),
        `written ${run}`,
        `stopped ${run}`,
      ].join('\n') + '\n';
    // A log of 100 000 bytes from before: over the bound.
    mkdirSync(join(dir, 'log'));
    const before = 'an old line\n'.repeat(8334);
    writeFileSync(logFile, before);

    /** Starts the control plane with lib.sh's start_service, waits for its last line, stops it with stop_service. */
    async function startAndStop(run: string): Promise<{ pids: string; cmdline: string }> {
      const result = await runProgram(
        'bash',
        [
          '-c',
          `set -euo pipefail
        source installer/appliance/lib.sh
        PREFIX=${prefix} LOG_FILE=${logFile} PID_FILE=${pidFile} LOG_MAX_BYTES=${BOUND}
        # Left out, as they need root and a systemd: the service user (this one runs it) and systemd (not asked).
        uses_systemd() { false; }
        as_service_user() { exec "$@"; }
        point current ${release}
        start_service
        for _ in $(seq 300); do grep -qs "written $RUN" "$LOG_FILE" && break; sleep 0.1; done
        echo "$(cat "$PID_FILE") $(background_pid)"
        tr '\\0' ' ' <"/proc/$(background_pid)/cmdline"
        stop_service`,
        ],
        { RUN: run },
      );
      t.equal(result.code, 0, result.stderr);
      // The writer ends with the control plane's output, after its last lines.
      const deadline = Date.now() + 5000;
      while (logWriters().length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      t.same(logWriters(), [], 'no log writer left');
      t.notOk(existsSync(pidFile), 'the pid file is removed');
      const [pids = '', cmdline = ''] = result.stdout.split('\n');
      return { pids, cmdline };
    }
    const logWriters = () => processes(`rotating-log.ts\0${logFile}\0`);
    const logs = () => readdirSync(join(dir, 'log')).sort();
    const read = (suffix: string) => readFileSync(`${logFile}${suffix}`, 'utf8');

    const first = await startAndStop('first');
    const [pidInFile, pidFound] = first.pids.split(' ');
    t.equal(pidInFile, pidFound, "the pid file holds the control plane's pid, not its log writer's");
    t.match(first.cmdline, `${release}/control-plane/src/main.ts`);
    t.same(logs(), ['control-plane.log', 'control-plane.log.1', 'control-plane.log.2', 'control-plane.log.3']);
    t.equal(read('.3'), before, 'the log over the bound from before is rotated whole, before the first write');
    t.equal(
      read('.2') + read('.1') + read(''),
      output('first'),
      'all of the output, in order, up to what it printed on SIGTERM',
    );
    for (const suffix of ['', '.1', '.2']) {
      t.ok(statSync(`${logFile}${suffix}`).size <= BOUND, `control-plane.log${suffix} is within the bound`);
      t.match(read(suffix), /^line \d{5} x+\n[^]*\n$/, `control-plane.log${suffix} is whole lines`);
    }

    await startAndStop('second');
    t.same(
      logs(),
      ['control-plane.log', 'control-plane.log.1', 'control-plane.log.2', 'control-plane.log.3'],
      'three older logs at most',
    );
    const kept = read('.3') + read('.2') + read('.1') + read('');
    t.ok((output('first') + output('second')).endsWith(kept), 'the newest output is kept, the oldest dropped');
    t.notOk(kept.includes('an old line'));
  },
);
