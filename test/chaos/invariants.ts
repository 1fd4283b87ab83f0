// What must hold however the appliance was broken: checked after every round (once its faults are healed) and, with
// the settle-time checks, at the end of a run. Each check returns what it found wrong, in words; none is a violation.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ProcessJobState } from '../../worker-agent/src/runtimes/process-job-state.ts';
import type { ChaosAppliance } from './appliance.ts';
import { ROOT } from './processes.ts';
import type { Ledger } from './workload.ts';

const FINAL = ['completed', 'failed', 'cancelled'];

interface JobRow {
  id: string;
  kind: string;
  status: string;
  attempts: number;
  finished_at: Date | null;
  run_seconds: number;
}

/** What a final job looked like when first seen final: it must never change again. */
type FinalSnapshot = Pick<JobRow, 'status' | 'attempts' | 'run_seconds'> & { finishedAt: number };

export class Invariants {
  private readonly appliance: ChaosAppliance;
  private readonly ledger: Ledger;
  private readonly finals = new Map<string, FinalSnapshot>();
  /** Uploads already read back intact (each is read again only now and then). */
  private readonly verified = new Set<string>();
  /** Deployments seen serving: faults may interrupt them, never end them. */
  private readonly served = new Set<string>();

  constructor(appliance: ChaosAppliance, ledger: Ledger) {
    this.appliance = appliance;
    this.ledger = ledger;
  }

  private async sql<T>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await this.appliance.db.query(text, params)).rows as T[];
  }

  /** The checks that hold at any time once the round's faults are healed. */
  async afterRound(): Promise<string[]> {
    return [
      ...(await this.replicasAnswer()),
      ...(await this.jobsEndOnce()),
      ...(await this.creditsBalance()),
      ...(await this.datasetCounters()),
      ...(await this.uploadsIntact()),
      ...(await this.oneRevisionServes()),
      ...(await this.servingKeepsServing()),
      ...(await this.errorsKeepHostsPrivate()),
    ];
  }

  /**
   * A deployment once ready never ends failed: its server is restartable on any host of its region and faults heal, so
   * a lost host or connection, a restarted database or replica, or a failed replace may interrupt it, not end it.
   */
  private async servingKeepsServing(): Promise<string[]> {
    const deployments = await this.sql<{ id: string; slug: string; status: string; status_message: string | null }>(
      `select id, slug, status, status_message from deployments`,
    );
    const found: string[] = [];
    for (const deployment of deployments) {
      if (deployment.status === 'ready') this.served.add(deployment.id);
      else if (deployment.status === 'failed' && this.served.has(deployment.id))
        found.push(`${deployment.slug} served, then failed: ${deployment.status_message ?? 'no reason given'}`);
    }
    return found;
  }

  /** What a job's workspace is shown of its failure names no path of a host or a replica. */
  private async errorsKeepHostsPrivate(): Promise<string[]> {
    return (
      await this.sql<{ id: string; error: string }>(
        `select id, error from jobs where strpos(error, $1) > 0 or strpos(error, $2) > 0`,
        [this.appliance.dir, ROOT],
      )
    ).map((job) => `job ${job.id} shows its workspace a host's path: ${job.error}`);
  }

  /** After the settle time: nothing left running that should not be, nothing left behind. */
  async settled(): Promise<string[]> {
    return [...(await this.afterRound()), ...(await this.jobsEnded()), ...(await this.nothingLeftBehind())];
  }

  private async replicasAnswer(): Promise<string[]> {
    const found: string[] = [];
    for (const replica of this.appliance.replicas) {
      const answer = await fetch(`${replica.url}/api/health`).catch((error: Error) => error);
      if (answer instanceof Error || !answer.ok)
        found.push(`${replica.name} does not answer: ${answer instanceof Error ? answer.message : answer.status}`);
    }
    return found;
  }

  /** A job seen final stays exactly as it ended: not ended again, not run again (its attempts and time unchanged). */
  private async jobsEndOnce(): Promise<string[]> {
    const found: string[] = [];
    const jobs = await this.sql<JobRow>('select id, kind, status, attempts, finished_at, run_seconds from jobs');
    for (const job of jobs) {
      const seen = this.finals.get(job.id);
      if (seen) {
        const now = {
          status: job.status,
          attempts: job.attempts,
          run_seconds: job.run_seconds,
          finishedAt: job.finished_at?.getTime() ?? -1,
        };
        if (JSON.stringify(now) !== JSON.stringify(seen))
          found.push(
            `job ${job.id} (${job.kind}) changed after it ended: ${JSON.stringify(seen)} → ${JSON.stringify(now)}`,
          );
      } else if (FINAL.includes(job.status)) {
        if (!job.finished_at) found.push(`job ${job.id} (${job.kind}) is ${job.status} without an end time`);
        this.finals.set(job.id, {
          status: job.status,
          attempts: job.attempts,
          run_seconds: job.run_seconds,
          finishedAt: job.finished_at?.getTime() ?? -1,
        });
      }
    }
    // A process started for a job after it ended ran it again.
    for (const agent of this.appliance.agents) {
      for (const { record } of await ProcessJobState.list(agent.workDir).catch(() => [])) {
        const ended = this.finals.get(record.jobId);
        if (ended && record.startedAt > ended.finishedAt + 1000)
          found.push(`job ${record.jobId} started again on ${agent.name} after it ended ${ended.status}`);
      }
    }
    return found;
  }

  /** Each job charged at most once and refunded at most what it was charged; every balance is its transactions' sum. */
  private async creditsBalance(): Promise<string[]> {
    const found: string[] = [];
    for (const row of await this.sql<{ job_id: string; kind: string; count: number }>(
      `select job_id, kind, count(*)::int as count from credit_transactions where job_id is not null
        group by job_id, kind having count(*) > 1`,
    ))
      found.push(`job ${row.job_id} has ${row.count} ${row.kind} transactions`);
    for (const row of await this.sql<{ job_id: string }>(
      `select r.job_id from credit_transactions r where r.kind = 'refund' and not exists
        (select 1 from credit_transactions c where c.job_id = r.job_id and c.kind = 'charge' and c.amount_cents = -r.amount_cents)`,
    ))
      found.push(`job ${row.job_id} was refunded what it was not charged`);
    for (const row of await this.sql<{ workspace_id: string; balance: string; sum: string }>(
      `select b.workspace_id, b.balance_cents as balance, coalesce(sum(t.amount_cents), 0) as sum
         from credit_balances b left join credit_transactions t on t.workspace_id = b.workspace_id
        group by b.workspace_id, b.balance_cents having b.balance_cents <> coalesce(sum(t.amount_cents), 0)`,
    ))
      found.push(`workspace ${row.workspace_id}: balance ${row.balance} ≠ its transactions' sum ${row.sum}`);
    for (const row of await this.sql<{ job_id: string; epochs: number; total: number }>(
      `select t.job_id, (t.metadata->>'epochs')::int as epochs, (j.payload->'trainArgs'->>'epochs')::int as total
         from credit_transactions t join jobs j on j.id = t.job_id
        where t.kind = 'charge' and j.kind = 'training' and (t.metadata->>'epochs')::int > (j.payload->'trainArgs'->>'epochs')::int`,
    ))
      found.push(`training job ${row.job_id} charged ${row.epochs} epochs of ${row.total}`);
    return found;
  }

  /** Every dataset's counters equal its rows. */
  private async datasetCounters(): Promise<string[]> {
    const rows = await this.sql<{ slug: string; counters: string; rows: string }>(
      `select d.slug,
          json_build_array(d.image_count, d.annotation_count, d.train_count, d.val_count, d.test_count, d.labeled_count)::text as counters,
          json_build_array(count(i.id), coalesce(sum(i.label_count), 0), count(*) filter (where i.split = 'train'),
            count(*) filter (where i.split = 'val'), count(*) filter (where i.split = 'test'),
            count(*) filter (where i.label_count > 0))::text as rows
         from datasets d left join images i on i.dataset_id = d.id
        group by d.id`,
    );
    const found = rows
      .filter((row) => row.counters !== row.rows)
      .map((row) => `dataset ${row.slug}: counters ${row.counters} ≠ rows ${row.rows}`);
    for (const row of await this.sql<{ id: string }>(
      `select i.id from images i where i.label_count <> (select count(*) from annotations a where a.image_id = i.id)`,
    ))
      found.push(`image ${row.id}: labelCount ≠ its annotations`);
    return found;
  }

  /** Every accepted upload reads back as it was sent (new ones each round, the others again at the end). */
  private async uploadsIntact(all = false): Promise<string[]> {
    const found: string[] = [];
    for (const upload of this.ledger.uploads) {
      if (!all && this.verified.has(upload.model)) continue;
      const files = await fetch(`${this.appliance.url}/api/models/alice/chaos/${upload.model}/files`, {
        headers: { authorization: `Bearer ${this.appliance.key}` },
      });
      const listed = (await files.json()) as { files?: Array<{ downloadUrl: string }> };
      const url = listed.files?.[0]?.downloadUrl;
      if (!url) {
        found.push(`upload to ${upload.model} (accepted) has no file: ${files.status} ${JSON.stringify(listed)}`);
        continue;
      }
      const bytes = Buffer.from(await (await fetch(url)).arrayBuffer());
      const digest = createHash('sha256').update(bytes).digest('hex');
      if (digest !== upload.sha256) found.push(`upload to ${upload.model} reads back altered (${bytes.length} bytes)`);
      else this.verified.add(upload.model);
    }
    return found;
  }

  /**
   * A deployment whose replace has settled (ready, nothing starting) is served by one revision: every other revision's
   * job has ended and its server no longer answers.
   */
  private async oneRevisionServes(): Promise<string[]> {
    const found: string[] = [];
    const settled = await this.sql<{ id: string; slug: string }>(
      `select d.id, d.slug from deployments d where d.status = 'ready' and not exists
        (select 1 from deployment_revisions r where r.deployment_id = d.id and r.state = 'starting')`,
    );
    for (const deployment of settled) {
      const stale = await this.sql<{ number: number; service_url: string | null; job_status: string | null }>(
        `select r.number, r.service_url, j.status as job_status from deployment_revisions r left join jobs j on j.id = r.job_id
          where r.deployment_id = $1 and r.state in ('retired', 'failed') and coalesce(r.retired_at, r.created_at) < now() - interval '60 seconds'`,
        [deployment.id],
      );
      for (const revision of stale) {
        if (revision.job_status && !FINAL.includes(revision.job_status))
          found.push(`${deployment.slug}: revision ${revision.number} is done but its job is ${revision.job_status}`);
        if (revision.service_url && (await answers(revision.service_url)))
          found.push(
            `${deployment.slug}: revision ${revision.number}'s server still answers after the replace settled`,
          );
      }
    }
    return found;
  }

  /** After the settle time every job has ended, but a live deployment's server. */
  private async jobsEnded(): Promise<string[]> {
    return (
      await this.sql<{ id: string; kind: string; status: string }>(
        `select j.id, j.kind, j.status from jobs j where j.status in ('queued', 'running') and not exists
          (select 1 from deployment_revisions r where r.job_id = j.id and r.state = 'live')`,
      )
    ).map((job) => `job ${job.id} (${job.kind}) still ${job.status} after the settle time`);
  }

  /** No process of an ended job, no job state left on a host, no temporary file left in a replica. */
  private async nothingLeftBehind(): Promise<string[]> {
    const found: string[] = [...(await this.uploadsIntact(true))];
    const active = new Set(
      (await this.sql<{ id: string }>(`select id from jobs where status in ('queued', 'running')`)).map(
        (job) => job.id,
      ),
    );
    for (const agent of this.appliance.agents) {
      for (const { record } of await ProcessJobState.list(agent.workDir)) {
        if (active.has(record.jobId)) continue;
        found.push(`${agent.name} keeps the state of ended job ${record.jobId}`);
        if (processGroupAlive(record.pid))
          found.push(`${agent.name} left ended job ${record.jobId}'s processes running`);
      }
    }
    for (const replica of this.appliance.replicas) {
      const tmp = join(this.appliance.dir, `${replica.name}-tmp`);
      // Node's own compile cache (module.enableCompileCache) lives there too: it is no job's.
      const left = existsSync(tmp)
        ? readdirSync(tmp).filter((name) => name !== 'node-compile-cache' && !active.has(jobIdIn(name)))
        : [];
      if (left.length > 0) found.push(`${replica.name} left temporary files: ${left.slice(0, 5).join(', ')}`);
    }
    return found;
  }
}

function processGroupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** vp-ingest-<jobId>-<attempt>-…: the job whose work it is. */
function jobIdIn(name: string): string {
  return /^vp-\w+-([0-9a-f]{24})-/.exec(name)?.[1] ?? '';
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(`${url.replace(/\/+$/, '')}/health`, { signal: AbortSignal.timeout(3000) });
    return true;
  } catch {
    return false;
  }
}
