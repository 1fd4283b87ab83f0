import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig, Region } from '@vp/config';
import { KNOWN_GPU_TYPE_IDS } from '@vp/protocol';
import type { z } from 'zod';
import { requireKey } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { Conflict, Forbidden, HttpError, Invalid, NotFound, Unavailable } from '../http/errors.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { enqueueJob } from '../jobs/job-queue.ts';
import { findModel } from '../models/model-access.ts';
import type { Model } from '../models/model.entity.ts';
import { cachedWeightsSha256, mobileModelOf, recordWeightsSha256 } from '../models/model.store.ts';
import { someHostOffers } from '../scheduler/host-offers.ts';
import { digestOf } from '../storage/md5-of.ts';
import { BAD_SIGNATURE } from '../storage/signed-url.ts';
import type { Storage } from '../storage/storage.ts';
import { forgetObject } from '../storage/stored-object.store.ts';
import { liveHostsLackingExporter } from '../workers/host.store.ts';
import { normalizeArgs, type ExportArgs, type NormalizedArgs } from './export-args.ts';
import { MOBILE_FORMATS, type ExportFormatId } from './export-formats.ts';
import type { ExportWaits } from './export-waits.ts';
import { EXPORT_JOB, type ExportPayload } from './export.job.ts';
import type {
  ExportCreate,
  ExportCreated,
  ExportDeleted,
  ExportList,
  ExportListQuery,
  ExportRead,
  ExportView,
  MobileLink,
  MobileModel,
  MobileResolve,
} from './export.schemas.ts';
import {
  activeExportJobs,
  completedEquivalent,
  completedOfWeights,
  deleteExports,
  exportById,
  findExport,
  inFlightEquivalent,
  insertActiveExport,
  insertCompletedExport,
  latestEquivalent,
  listExports,
  setExportJob,
  type ExportRecord,
  type ExportStatus,
  type NewExport,
} from './export.store.ts';
import { modelFamily } from './model-family.ts';

type Address = { owner: string; project: string; model: string };

/** A completed export's download link in reads. */
const DOWNLOAD_URL_SECONDS = 3600;
/** A mobile import link (and the download it resolves to) lives this long. */
const MOBILE_LINK_SECONDS = 24 * 3600;
const IMX_TASKS = ['detect', 'segment', 'classify', 'pose'];
const ACTIVE = ['queued', 'starting', 'running'];
const mobilePath = (exportId: string) => `/api/mobile/models/${exportId}`;
/** What an ExportService needs besides its entity manager. */
export type ExportDeps = {
  config: Pick<AppConfig, 'region' | 'hostLostGraceSeconds'>;
  storage: Storage;
  lifecycle: JobLifecycle;
  /** Absent where no request waits (jobs, the predictor): a read with `wait` then answers at once. */
  waits?: ExportWaits;
};
const ENDED: ReadonlySet<ExportStatus> = new Set(['completed', 'failed', 'cancelled']);
const IN_FLIGHT = () =>
  Conflict(
    'An equivalent export (same weights, format, args and GPU type) is already in flight; wait for it or cancel it',
  );
/** How often an automatic export looks again when the equivalent one it would follow ended before it was read. */
const FOLLOW_TRIES = 3;

/** A model's exports: host jobs that run `yolo export`, their artifacts, and 24-hour mobile import links. */
export class ExportService {
  private readonly em: EntityManager;
  private readonly storage: Storage;
  private readonly region: Region;
  private readonly lifecycle: JobLifecycle;
  /** Hosts silent longer than this (HOST_LOST_GRACE_SECONDS) do not count as offering a toolchain. */
  private readonly graceSeconds: number;
  private readonly waits: ExportWaits | undefined;

  constructor(em: EntityManager, deps: ExportDeps) {
    this.em = em;
    this.storage = deps.storage;
    this.region = deps.config.region;
    this.lifecycle = deps.lifecycle;
    this.graceSeconds = deps.config.hostLostGraceSeconds;
    this.waits = deps.waits;
  }

  async list(
    actor: Actor,
    at: Address,
    options: z.output<typeof ExportListQuery>,
  ): Promise<z.input<typeof ExportList>> {
    const { model } = await findModel(this.em, actor, at.owner, at.project, at.model, 'view');
    const records = await listExports(this.em, model.id, options);
    return { exports: await Promise.all(records.map((record) => this.view(record))), region: this.region };
  }

  /** With `wait`, held while the export is in flight until it ends or the seconds pass (see ExportWaits). */
  async read(
    actor: Actor,
    at: Address & { exportId: string },
    wait?: { seconds: number; signal: AbortSignal },
  ): Promise<z.input<typeof ExportRead>> {
    const read = () => this.find(actor, at, 'view');
    const record =
      wait?.seconds && this.waits
        ? await this.waits.readUntil(at.exportId, wait.seconds, wait.signal, read, (found) => ENDED.has(found.status))
        : await read();
    return { export: await this.view(record) };
  }

  async create(actor: Actor, at: Address, body: z.output<typeof ExportCreate>): Promise<z.input<typeof ExportCreated>> {
    const key = requireKey(actor);
    const { model } = await findModel(this.em, actor, at.owner, at.project, at.model, 'edit');
    const format = body.format;
    const gpuType = this.gpuTypeFor(format, body.gpuType ?? null);
    const args = normalizeArgs(format, body.args ?? {});
    if (format === 'imx') await this.requireImxModel(model);
    if (!model.fileKey) throw Invalid(`Model ${at.owner}/${at.project}/${at.model} has no weights yet`);
    const created = await this.newExport(model, format, args, gpuType);
    if (await inFlightEquivalent(this.em, created.workspaceId, created.fingerprint)) throw IN_FLIGHT();
    const queued = await this.queue(model, created, key.workspaceId);
    if (!queued) throw IN_FLIGHT();
    const { id, reused } = queued;
    return {
      id,
      format,
      status: reused ? 'running' : 'queued',
      ...(gpuType && { gpuType }),
      region: this.region,
      reused,
    };
  }

  /**
   * The export the platform makes itself (predict's ONNX, queued when a model gets weights): no key and no rate limit,
   * listed with the model's exports like any other. Answers the model's newest equivalent export (or a clone's in
   * flight) unless it failed or was cancelled; else queues one, completed at once when the workspace has the artifact.
   * 503 naming the reason when no host can export the format.
   */
  async automatic(model: Model, format: ExportFormatId, given: ExportArgs): Promise<ExportRecord> {
    if (!model.fileKey) throw Invalid(`Model ${model.slug} has no weights yet`);
    const created = await this.newExport(model, format, normalizeArgs(format, given), null);
    for (let tries = 0; tries < FOLLOW_TRIES; tries++) {
      const latest = await latestEquivalent(this.em, model.id, created.workspaceId, created.fingerprint);
      if (latest && latest.status !== 'failed' && latest.status !== 'cancelled') return latest;
      const queued = await this.queue(model, created, created.workspaceId);
      if (queued) return (await exportById(this.em, queued.id))!;
      // An equivalent export is in flight (another predict's, a clone's, or one behind this model's cancelled one): it is followed.
      const inFlight = await inFlightEquivalent(this.em, created.workspaceId, created.fingerprint);
      if (inFlight) return inFlight;
    }
    throw Unavailable(`The ONNX export of model ${model.slug} kept ending as it was queued; try again`);
  }

  /** The file of a completed export of the model's current weights to `format` made with any arguments, if there is one. */
  async completedOfWeights(model: Model, format: ExportFormatId): Promise<string | undefined> {
    if (!model.fileKey) return undefined;
    return completedOfWeights(this.em, model.workspace.id, await this.weightsSha256(model, model.fileKey), format);
  }

  private async newExport(
    model: Model,
    format: ExportFormatId,
    args: NormalizedArgs,
    gpuType: string | null,
  ): Promise<NewExport> {
    const weightsKey = model.fileKey!;
    const weightsSha256 = await this.weightsSha256(model, weightsKey);
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([weightsSha256, format, args, gpuType]))
      .digest('hex');
    return {
      workspaceId: model.workspace.id,
      modelId: model.id,
      format,
      args,
      gpuType,
      weightsKey,
      weightsSha256,
      fingerprint,
    };
  }

  /**
   * Reuses the workspace's equal completed artifact, else queues the job (503 when no host `hostsOf` may use can make
   * it); undefined when an equivalent export is in flight (queued by another request since the caller looked).
   */
  private async queue(
    model: Model,
    created: NewExport,
    hostsOf: string,
  ): Promise<{ id: string; reused: boolean } | undefined> {
    const { format, args, gpuType, fingerprint } = created;
    const reusable = await completedEquivalent(this.em, created.workspaceId, fingerprint);
    if (reusable) return { id: await insertCompletedExport(this.em, created, reusable), reused: true };
    await this.requireExporter(hostsOf, format, gpuType);

    const payload: ExportPayload = { format, args, stem: model.slug };
    const id = await this.em.transactional(async (em) => {
      const exportId = await insertActiveExport(em, created);
      if (!exportId) return undefined;
      const job = await enqueueJob(em, {
        kind: EXPORT_JOB,
        workspaceId: created.workspaceId,
        subjectId: exportId,
        payload: { ...payload },
        host: { gpuType, gpuCount: gpuType ? 1 : 0, toolchain: format, restartable: true },
      });
      await setExportJob(em, exportId, job.id);
      return exportId;
    });
    return id === undefined ? undefined : { id, reused: false };
  }

  /** An active export is cancelled through its job; a finished one is deleted with its file, unless another export shares it. */
  async remove(actor: Actor, at: Address & { exportId: string }): Promise<z.input<typeof ExportDeleted>> {
    const record = await this.find(actor, at, 'edit');
    if (ACTIVE.includes(record.status) && record.jobId) {
      const cancelled = await this.lifecycle.requestCancel(this.em, record.jobId);
      if (cancelled) return { success: true, action: 'cancelled' };
      throw Conflict('The export has just ended; read it again, then delete it');
    }
    const unused = await this.em.transactional((em) => deleteExports(em, [record.id]));
    await releaseExportFiles(this.em, this.storage, unused);
    return { success: true, action: 'deleted' };
  }

  async mobileLink(actor: Actor, at: Address & { exportId: string }): Promise<z.input<typeof MobileLink>> {
    const record = await this.find(actor, at, 'view');
    if (!(MOBILE_FORMATS as string[]).includes(record.format)) {
      throw Invalid(
        `Format ${record.format} has no mobile import; mobile-compatible formats: ${MOBILE_FORMATS.join(', ')}`,
      );
    }
    if (record.status !== 'completed')
      throw Conflict(`The export is ${record.status}; a mobile link needs a completed export`);
    const expiresAt = new Date((Math.floor(Date.now() / 1000) + MOBILE_LINK_SECONDS) * 1000);
    const signed = new URL(this.storage.signer.sign('GET', mobilePath(record.id), expiresAt));
    const fragment = new URLSearchParams({
      expires: signed.searchParams.get('expires')!,
      signature: signed.searchParams.get('signature')!,
    });
    return {
      importUrl: `${this.storage.signer.baseUrl()}${mobilePath(record.id)}#${fragment.toString()}`,
      expiresAt: expiresAt.toISOString(),
    };
  }

  /** No key: the link's signature is the authority. Any refusal reads the same, so a link never tells what exists. */
  async resolveMobile(exportId: string, body: z.output<typeof MobileResolve>): Promise<z.input<typeof MobileModel>> {
    this.storage.signer.verify('GET', mobilePath(exportId), {
      expires: String(body.expires),
      signature: body.signature,
    });
    const record = await exportById(this.em, exportId);
    const model = record ? await mobileModelOf(this.em, record.modelId) : undefined;
    if (
      !record ||
      !model?.live ||
      record.status !== 'completed' ||
      !record.fileKey ||
      !(MOBILE_FORMATS as string[]).includes(record.format)
    )
      throw Forbidden(BAD_SIGNATURE);
    const filename = record.fileName ?? record.format;
    return {
      version: 1,
      exportId: record.id,
      name: model.name,
      task: model.task as z.input<typeof MobileModel>['task'],
      format: record.format,
      filename,
      size: record.fileSize ?? 0,
      downloadUrl: await this.storage.urls.download(record.fileKey, {
        expiresInSeconds: Math.max(1, body.expires - Math.floor(Date.now() / 1000)),
        filename,
      }),
      expiresAt: new Date(body.expires * 1000).toISOString(),
    };
  }

  private async find(actor: Actor, at: Address & { exportId: string }, need: 'view' | 'edit'): Promise<ExportRecord> {
    const { model } = await findModel(this.em, actor, at.owner, at.project, at.model, need);
    const record = await findExport(this.em, model.id, at.exportId);
    if (!record) throw NotFound(`Export ${at.exportId} not found`);
    return record;
  }

  private async view(record: ExportRecord): Promise<z.input<typeof ExportView>> {
    const file =
      record.status === 'completed' && record.fileKey
        ? {
            size: record.fileSize ?? 0,
            downloadUrl: await this.storage.urls.download(record.fileKey, {
              expiresInSeconds: DOWNLOAD_URL_SECONDS,
              filename: record.fileName ?? undefined,
            }),
            downloadFilename: record.fileName ?? '',
          }
        : undefined;
    return {
      id: record.id,
      status: record.status,
      format: record.format,
      args: record.args,
      ...(record.gpuType && { gpuType: record.gpuType }),
      ...(file && { file }),
      ...(record.status === 'failed' && {
        error: { message: record.error ?? 'The export failed', timestamp: record.updatedAt.toISOString() },
      }),
      ...(record.startedAt && { startedAt: record.startedAt.toISOString() }),
      ...(record.completedAt && { completedAt: record.completedAt.toISOString() }),
      createdAt: record.createdAt.toISOString(),
      updatedAt: record.updatedAt.toISOString(),
    };
  }

  /** A TensorRT engine is built on (and for) one GPU type; every other format exports on a host's CPU. */
  private gpuTypeFor(format: ExportFormatId, gpuType: string | null): string | null {
    if (format !== 'engine') {
      if (gpuType !== null)
        throw Invalid(`gpuType applies to engine (TensorRT) exports only; ${format} exports run on a host's CPU`);
      return null;
    }
    if (gpuType === null)
      throw Invalid('gpuType is required for engine exports: the GPU type the TensorRT engine is built for');
    if (!KNOWN_GPU_TYPE_IDS.includes(gpuType))
      throw Invalid(`gpuType "${gpuType}" is not a GPU type ID (see GET /api/training/gpu-availability)`);
    return gpuType;
  }

  /** The spec's imx rules besides INT8 (normalizeArgs sees to that): a detect/segment/classify/pose model, a nano YOLOv8 or YOLO11. */
  private async requireImxModel(model: Model): Promise<void> {
    if (!IMX_TASKS.includes(model.task))
      throw Invalid(`imx exports take ${IMX_TASKS.join(', ')} models; this one is ${model.task}`);
    const family = await modelFamily(this.em, model);
    if (family?.family === 'yolo26') throw Invalid('imx exports do not support YOLO26 models');
    if (family && family.size !== null && family.size !== 'n')
      throw Invalid(
        `imx exports take only nano ${family.family === 'yolov8' ? 'YOLOv8' : 'YOLO11'} models (this one is ${family.family}${family.size})`,
      );
  }

  /** The weights' SHA-256, streamed from the store once per file and kept on the model. */
  private async weightsSha256(model: Model, weightsKey: string): Promise<string> {
    const cached = await cachedWeightsSha256(this.em, model.id, weightsKey);
    if (cached) return cached;
    const sha = await digestOf(this.storage.store, weightsKey, 'sha256');
    if (!sha) throw Invalid(`The weights of model ${model.slug} are missing from storage; upload them again`);
    await recordWeightsSha256(this.em, weightsKey, sha);
    return sha;
  }

  /** 503 naming what is missing when no connected host the workspace may use exports to the format. */
  private async requireExporter(workspaceId: string, format: ExportFormatId, gpuType: string | null): Promise<void> {
    if (await someHostOffers(this.em, workspaceId, { gpuType: gpuType ?? 'cpu', toolchain: format }, this.graceSeconds))
      return;
    const missing = await liveHostsLackingExporter(this.em, workspaceId, format, this.graceSeconds);
    const toolchain = `the ${format} toolchain`;
    if (gpuType) {
      throw new HttpError(
        503,
        `No connected worker host with a ${gpuType} GPU can export to engine; the host needs a ${gpuType} GPU and ${toolchain}${missing.reason ? ` (${missing.reason})` : ''}`,
      );
    }
    if (missing.hosts === 0 && !missing.reason)
      throw new HttpError(503, `No worker host can export to ${format}: no worker host is connected`);
    throw new HttpError(
      503,
      `No worker host can export to ${format}: its trainer environment lacks ${toolchain}${missing.reason ? ` (${missing.reason})` : ''}`,
    );
  }
}

/** Deletes export files nothing refers to any more, each record after its file (a crash leaves a recorded file the sweep finds). */
export async function releaseExportFiles(em: EntityManager, storage: Storage, keys: string[]): Promise<void> {
  for (const key of keys) {
    await storage.store.delete(key);
    await forgetObject(em, key);
  }
}

/** Models going to trash take their exports with them: the active ones are cancelled (erasing them deletes the rest). */
export async function cancelExportsOf(em: EntityManager, lifecycle: JobLifecycle, modelIds: string[]): Promise<void> {
  for (const jobId of await activeExportJobs(em, modelIds)) await lifecycle.requestCancel(em, jobId);
}
