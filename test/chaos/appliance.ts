// The appliance the chaos suite breaks: two control-plane replicas on one PostgreSQL of its own and one S3 store (SeaweedFS,
// behind a proxy that can slow it), reached through a load-balancing proxy, and worker agents on the process runtime
// with the real trainer, each behind a proxy of its own (its connection to the control plane can be cut) and with its
// work dir on a small disk of its own (which can be filled).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { defaults } from '@vp/config';
import { ProcessJobState } from '../../worker-agent/src/runtimes/process-job-state.ts';
import { freePorts, startS3Process, type S3Process } from '../helpers/s3-server.ts';
import { ChaosPostgres } from './postgres.ts';
import { ManagedProcess, ROOT } from './processes.ts';
import { TcpProxy } from './tcp-proxy.ts';
import { WorkDisk } from './work-disk.ts';

const run = promisify(execFile);
const VENV = join(ROOT, '.venv-trainer');
const WORK_DISK_MIB = 768;
const START_TIMEOUT_MS = 90_000;

export interface Replica {
  name: string;
  port: number;
  url: string;
  process: ManagedProcess;
}

export interface AgentHost {
  name: string;
  workDir: string;
  /** Its own way to the replicas: cut to cut this host off. */
  proxy: TcpProxy;
  disk: WorkDisk | undefined;
  process: ManagedProcess;
}

export class ChaosAppliance {
  readonly dir: string;
  readonly postgres: ChaosPostgres;
  readonly s3: S3Process;
  /** Between the replicas and the S3 server: slowed to delay the store. */
  readonly storeProxy: TcpProxy;
  /** The replicas' load balancer: clients and trainers reach the appliance here (PUBLIC_BASE_URL). */
  readonly balancer: TcpProxy;
  readonly replicas: Replica[];
  readonly agents: AgentHost[] = [];
  readonly db: pg.Pool;
  private readonly env: NodeJS.ProcessEnv;
  key = '';

  private constructor(fields: {
    dir: string;
    postgres: ChaosPostgres;
    s3: S3Process;
    storeProxy: TcpProxy;
    balancer: TcpProxy;
    replicas: Replica[];
    env: NodeJS.ProcessEnv;
  }) {
    this.dir = fields.dir;
    this.postgres = fields.postgres;
    this.s3 = fields.s3;
    this.storeProxy = fields.storeProxy;
    this.balancer = fields.balancer;
    this.replicas = fields.replicas;
    this.env = fields.env;
    // Reads for the invariants; it rides out the database's restarts (a failed query is retried by the caller).
    this.db = new pg.Pool({ connectionString: this.databaseUrl, max: 2 });
    this.db.on('error', () => undefined);
  }

  get databaseUrl(): string {
    return this.env.DATABASE_URL!;
  }

  static async start(dir: string, agentCount: number): Promise<ChaosAppliance> {
    mkdirSync(dir, { recursive: true });
    // PostgreSQL's own user must reach its folder inside (mkdtemp makes it 0700).
    chmodSync(dir, 0o711);
    const [pgPort, ...replicaPorts] = await freePorts(3);
    const postgres = await ChaosPostgres.create(join(dir, 'postgres'), pgPort!);
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query('create database vision');
    await admin.end();
    const s3 = await startS3Process(join(dir, 's3'));
    const storeProxy = await TcpProxy.start([Number(new URL(s3.endpoint).port)]);
    const storageUrl = new URL(s3.storageUrl);
    storageUrl.searchParams.set('endpoint', storeProxy.url);
    const balancer = await TcpProxy.start(replicaPorts);
    const databaseUrl = new URL(postgres.url);
    databaseUrl.pathname = '/vision';
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATABASE_URL: databaseUrl.toString(),
      STORAGE_URL: storageUrl.toString(),
      SIGNING_SECRET: randomBytes(32).toString('hex'),
      PUBLIC_BASE_URL: balancer.url,
      WORKER_HEARTBEAT_SECONDS: '1',
      HOST_LOST_GRACE_SECONDS: '10',
      // One key makes every request: no rate limit is under test here.
      ...Object.fromEntries(
        Object.keys(defaults.rateLimits).map((name) => [`RATE_LIMIT_${name.toUpperCase()}`, '1000000']),
      ),
    };
    const replicas = replicaPorts.map((port, index) => {
      const name = `replica-${index}`;
      // Its temporary files apart, so the suite can tell what it left behind.
      const tmp = join(dir, `${name}-tmp`);
      mkdirSync(tmp, { recursive: true });
      const replicaEnv = { ...env, PORT: String(port), DATA_DIR: join(dir, name), TMPDIR: tmp };
      return {
        name,
        port,
        url: `http://127.0.0.1:${port}`,
        process: new ManagedProcess(name, ['--max-semi-space-size=4', 'control-plane/src/main.ts'], replicaEnv),
      };
    });
    const appliance = new ChaosAppliance({ dir, postgres, s3, storeProxy, balancer, replicas, env });
    for (const replica of replicas) await appliance.startReplica(replica);
    await appliance.vpctl('users', 'create', 'alice');
    appliance.key = (await appliance.vpctl('keys', 'create', '--workspace', 'alice', '--name', 'chaos')).trim();
    await appliance.vpctl('credits', 'grant', 'alice', '100000');
    for (let index = 0; index < agentCount; index++) await appliance.addAgent(`chaos-host-${index}`);
    return appliance;
  }

  /** Starts the replica (again) and waits until it answers. */
  async startReplica(replica: Replica): Promise<void> {
    replica.process.start();
    await waitFor(
      async () => (await fetch(`${replica.url}/api/health`)).ok,
      () => `${replica.name} to answer:\n${replica.process.output().slice(-3000)}`,
    );
  }

  /** vpctl on the appliance's database; its stdout. */
  async vpctl(...args: string[]): Promise<string> {
    const { stdout } = await run(process.execPath, ['installer/src/vpctl.ts', ...args], {
      cwd: ROOT,
      env: { ...this.env, DATA_DIR: join(this.dir, 'replica-0') },
      timeout: 60_000,
    });
    return stdout;
  }

  private async addAgent(name: string): Promise<void> {
    const proxy = await TcpProxy.start(this.replicas.map((replica) => replica.port));
    const workDir = join(this.dir, `${name}-work`);
    const disk = WorkDisk.canMount() ? await WorkDisk.mount(workDir, WORK_DISK_MIB) : undefined;
    const config = join(this.dir, `${name}.json`);
    const token = (await this.vpctl('hosts', 'connect', name)).trim();
    await run(
      process.execPath,
      ['worker-agent/bin/vp-worker.js', 'enroll', '--server', proxy.url, '--token', token, '--config', config],
      { cwd: ROOT, env: this.env, timeout: 60_000 },
    );
    const agent = new ManagedProcess(name, ['worker-agent/bin/vp-worker.js', 'run', '--config', config], {
      ...this.env,
      VP_WORKER_RUNTIME: 'process',
      VP_WORKER_WORK_DIR: workDir,
      VP_WORKER_PROCESS_VENV: VENV,
      VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME: '1',
    });
    agent.start();
    this.agents.push({ name, workDir, proxy, disk, process: agent });
  }

  /** Every part back as it should be: processes running, connections restored, disks freed, the database up. */
  async heal(): Promise<void> {
    if (!(await this.postgres.running())) await this.postgres.start();
    this.storeProxy.restore();
    for (const agent of this.agents) {
      agent.proxy.restore();
      agent.disk?.free();
      agent.process.start();
    }
    for (const replica of this.replicas) await this.startReplica(replica);
  }

  /** A replica that is up, for the workload's requests (the balancer would pick one the same way). */
  get url(): string {
    return this.balancer.url;
  }

  async stop(): Promise<void> {
    for (const agent of this.agents) {
      await agent.process.kill('SIGKILL');
      // Process-runtime jobs outlive their agent (the next one adopts them): none is adopted now.
      for (const { record } of await ProcessJobState.list(agent.workDir).catch(() => [])) {
        try {
          process.kill(-record.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    for (const replica of this.replicas) await replica.process.kill('SIGTERM');
    await this.db.end().catch(() => undefined);
    await this.s3.stop();
    await this.postgres.stop('fast');
    for (const proxy of [this.balancer, this.storeProxy, ...this.agents.map((agent) => agent.proxy)])
      await proxy.close();
    for (const agent of this.agents) await agent.disk?.unmount();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

async function waitFor(check: () => Promise<boolean>, what: () => string, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
