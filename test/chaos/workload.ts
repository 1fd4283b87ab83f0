// What users do while the chaos suite breaks the appliance: trainings on the real trainer, exports, ingests, weight
// uploads, batch predictions and deployment replaces, each through the public API as a client would. A request that
// fails under a fault is a client's bad luck, not a violation; what the appliance accepted is kept in the ledger for
// the invariants to hold it to.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { zipOf } from '../helpers/archives.ts';
import { call, type Fetched } from '../helpers/server.ts';
import { shapesFiles } from '../helpers/training-data.ts';
import { trainedModel } from '../helpers/yolo-models.ts';
import type { ChaosAppliance } from './appliance.ts';

export interface Ledger {
  /** Weight uploads the appliance accepted (complete answered 200): the model and the bytes' SHA-256. */
  uploads: Array<{ model: string; sha256: string }>;
}

export type Operation = 'train' | 'export' | 'ingest' | 'upload' | 'batchPredict' | 'replace';
export const OPERATIONS: readonly Operation[] = ['train', 'export', 'ingest', 'upload', 'batchPredict', 'replace'];

const EXPORT_SIZES = [64, 96, 128, 160, 192, 224, 256, 320];
/** Trainings at once at most: two CPU cores run the whole appliance. */
const MAX_TRAININGS = 2;
const TIMEOUT_MS = 30_000;

export class Workload {
  readonly ledger: Ledger = { uploads: [] };
  private readonly appliance: ChaosAppliance;
  private weights: Buffer = Buffer.alloc(0);
  private serving = 'base';

  constructor(appliance: ChaosAppliance) {
    this.appliance = appliance;
  }

  private request<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<Fetched<T>> {
    return call<T>({ url: this.appliance.url }, method, path, { key: this.appliance.key, body });
  }

  private async must<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.request<T>(method, path, body);
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  }

  /** What every round works on: project chaos with models base and base2 (the fixture's weights), dataset shapes, deployment serve. */
  async prepare(): Promise<void> {
    this.weights = readFileSync((await trainedModel('detect')).pt);
    await this.must('POST', '/api/projects', { project: 'chaos', name: 'Chaos' });
    for (const model of ['base', 'base2']) await this.upload(model);
    await this.ingest('shapes', 1, true);
    const deployment = { project: 'chaos', model: 'base', deployment: 'serve', name: 'serve', region: 'us-central1' };
    // The hosts' capabilities (the inference service) may still be on their way.
    await this.waitFor(
      async () => Boolean(await this.must('POST', '/api/deployments/alice', deployment)),
      'the deployment to be created',
    );
    await this.waitFor(
      async () =>
        (await this.must<{ deployment: { status: string } }>('GET', '/api/deployments/alice/serve')).deployment
          .status === 'ready',
      'the deployment to be ready',
      240_000,
    );
  }

  private async waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (
      !(await check().catch((error: Error) => {
        last = error.message;
        return false;
      }))
    ) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${last}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /** Runs one operation; `n` makes its names unique, `variant` picks among its forms. Failures under faults are expected and swallowed. */
  async run(operation: Operation, n: number, variant: number): Promise<void> {
    const work = {
      train: () => this.train(n),
      export: () => this.export(EXPORT_SIZES[variant % EXPORT_SIZES.length]!),
      ingest: () => this.ingest(`ingest-${n}`, n),
      upload: () => this.upload(`upload-${n}`),
      batchPredict: () => this.batchPredict(),
      replace: () => this.replace(),
    }[operation];
    await Promise.race([work(), new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS))]).catch(() => undefined);
  }

  private async train(n: number): Promise<void> {
    const [{ running }] = (
      await this.appliance.db.query<{ running: number }>(
        `select count(*)::int as running from jobs where kind = 'training' and status in ('queued', 'running')`,
      )
    ).rows as [{ running: number }];
    if (running >= MAX_TRAININGS) return;
    const model = await this.must<{ id: string }>('POST', '/api/models', { project: 'chaos', model: `train-${n}` });
    await this.must('POST', '/api/training/start', {
      modelId: model.id,
      gpuType: 'cpu',
      trainArgs: {
        model: 'yolo11n.yaml',
        data: 'ul://alice/datasets/shapes',
        epochs: 1 + (n % 2),
        imgsz: 64,
        batch: 8,
        workers: 0,
        plots: false,
      },
    });
  }

  private async export(imgsz: number): Promise<void> {
    await this.must('POST', '/api/models/alice/chaos/base/exports', { format: 'onnx', args: { imgsz } });
  }

  private async ingest(slug: string, seed: number, wait = false): Promise<void> {
    const dataset = await this.must<{ id: string }>('POST', '/api/datasets', {
      dataset: slug,
      name: slug,
      classNames: ['square', 'disc'],
    });
    const bytes = await zipOf(await shapesFiles(12, 4, seed));
    const ticket = await this.must<{ sessionId: string; uploadUrl: string; headers: Record<string, string> }>(
      'POST',
      '/api/upload/signed-url',
      {
        assetType: 'datasets',
        assetId: dataset.id,
        filename: `${slug}.zip`,
        contentType: 'application/zip',
        totalBytes: bytes.length,
      },
    );
    const put = await fetch(ticket.uploadUrl, { method: 'PUT', headers: ticket.headers, body: bytes });
    if (put.status !== 200) throw new Error(`PUT ${put.status}`);
    await this.must('POST', '/api/upload/complete', { sessionId: ticket.sessionId });
    const { jobId } = await this.must<{ jobId: string }>('POST', `/api/datasets/alice/${slug}/ingest`, {
      sessionId: ticket.sessionId,
    });
    if (wait)
      await this.waitFor(
        async () =>
          (await this.must<{ job: { status: string } }>('GET', `/api/jobs/${jobId}`)).job.status === 'completed',
        `the ingest of ${slug}`,
      );
  }

  /** Weights for model `slug` (created here) through signed URL → PUT → complete; accepted ones go in the ledger. */
  private async upload(slug: string): Promise<void> {
    const model = await this.must<{ id: string }>('POST', '/api/models', {
      project: 'chaos',
      model: slug,
      task: 'detect',
    });
    const ticket = await this.must<{ sessionId: string; uploadUrl: string; headers: Record<string, string> }>(
      'POST',
      '/api/upload/signed-url',
      {
        assetType: 'models',
        assetId: model.id,
        filename: 'best.pt',
        contentType: 'application/octet-stream',
        totalBytes: this.weights.length,
      },
    );
    const put = await fetch(ticket.uploadUrl, { method: 'PUT', headers: ticket.headers, body: this.weights });
    if (put.status !== 200) throw new Error(`PUT ${put.status}`);
    await this.must('POST', '/api/upload/complete', { sessionId: ticket.sessionId });
    this.ledger.uploads.push({ model: slug, sha256: createHash('sha256').update(this.weights).digest('hex') });
  }

  private async batchPredict(): Promise<void> {
    await this.must('POST', '/api/datasets/alice/shapes/predict/batch', { modelId: 'ul://alice/chaos/base' });
  }

  private async replace(): Promise<void> {
    const next = this.serving === 'base' ? 'base2' : 'base';
    await this.must('PATCH', '/api/deployments/alice/serve', { action: 'replace', model: next });
    this.serving = next;
  }
}
