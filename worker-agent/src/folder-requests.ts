// Answers the control plane's `folder.*` requests (protocol 4) from the shared folders: listings in one answer,
// reads as chunks sent only against the credit the control plane grants, so a slow reader holds the file, not
// this process's memory. Every request ends by itself after REQUEST_TIMEOUT_MS without credit.
import type { FileHandle } from 'node:fs/promises';
import {
  FOLDER_CHUNK_BYTES,
  FOLDER_READ_WINDOW,
  type AgentMessage,
  type FolderOp,
  type ServerMessage,
} from '@vp/protocol';
import type { Logger } from './log.ts';
import { FolderError, tooLarge, type SharedFolders } from './shared-folders.ts';

/** A read whose reader grants no credit for this long is dropped (its file closed). */
export const REQUEST_TIMEOUT_MS = 60_000;
/** Files open for the control plane at once; past it a read is refused until one ends. */
export const MAX_OPEN_READS = 64;

type FolderMessage = Extract<ServerMessage, { type: `folder.${string}` }>;

interface Read {
  file: FileHandle;
  credit: number;
  sent: number;
  maxBytes: number;
  key: string;
  timer: NodeJS.Timeout;
  /** Set while a chunk is being read and sent. */
  busy: boolean;
}

export class FolderRequests {
  private readonly folders: SharedFolders;
  private readonly log: Logger;
  private readonly send: (message: AgentMessage) => boolean;
  private readonly reads = new Map<string, Read>();
  /** Reads whose file is being opened, and whether they were cancelled meanwhile. */
  private readonly opening = new Map<string, { cancelled: boolean }>();

  constructor(folders: SharedFolders, log: Logger, send: (message: AgentMessage) => boolean) {
    this.folders = folders;
    this.log = log;
    this.send = send;
  }

  handle(message: FolderMessage): void {
    if (message.type === 'folder.request') void this.answer(message.requestId, message.op);
    else if (message.type === 'folder.credit') this.credit(message.requestId, message.chunks);
    else {
      const opening = this.opening.get(message.requestId);
      if (opening) opening.cancelled = true;
      void this.finish(message.requestId);
    }
  }

  /** The socket dropped: its requests are over (the control plane failed them on its side). */
  disconnected(): void {
    for (const opening of this.opening.values()) opening.cancelled = true;
    // A copy of the ids: finishing a read removes it from the map.
    for (const requestId of Array.from(this.reads.keys())) void this.finish(requestId);
  }

  private async answer(requestId: string, op: FolderOp): Promise<void> {
    try {
      if (op.kind === 'roots')
        return void this.send({ type: 'folder.result', requestId, result: { roots: this.folders.folders } });
      const root = await this.folders.resolveRoot(op.root);
      if (op.kind === 'browse')
        return void this.send({
          type: 'folder.result',
          requestId,
          result: await this.folders.browse(root, op.prefix, op.cursor, op.limit),
        });
      if (op.kind === 'list')
        return void this.send({
          type: 'folder.result',
          requestId,
          result: await this.folders.list(root, op.prefix, op.cursor, op.limit),
        });
      if (this.reads.size + this.opening.size >= MAX_OPEN_READS)
        throw new FolderError('failed', `${MAX_OPEN_READS} files are being read from this host already; try again`);
      const opening = { cancelled: false };
      this.opening.set(requestId, opening);
      const { file, size } = await this.folders
        .open(root, op.key, op.maxBytes)
        .finally(() => this.opening.delete(requestId));
      if (opening.cancelled) {
        await file.close();
        return;
      }
      const timer = setTimeout(
        () => void this.finish(requestId, new FolderError('failed', `no credit for ${REQUEST_TIMEOUT_MS / 1000} s`)),
        REQUEST_TIMEOUT_MS,
      );
      this.reads.set(requestId, {
        file,
        credit: FOLDER_READ_WINDOW,
        sent: 0,
        maxBytes: op.maxBytes,
        key: op.key,
        timer,
        busy: false,
      });
      this.send({ type: 'folder.result', requestId, result: { size } });
      await this.pump(requestId);
    } catch (error) {
      this.fail(requestId, error);
    }
  }

  private credit(requestId: string, chunks: number): void {
    const read = this.reads.get(requestId);
    if (!read) return;
    read.credit += chunks;
    read.timer.refresh();
    void this.pump(requestId);
  }

  /** Sends chunks while there is credit; the last one is followed by folder.end. */
  private async pump(requestId: string): Promise<void> {
    const read = this.reads.get(requestId);
    if (!read || read.busy) return;
    read.busy = true;
    try {
      while (read.credit > 0 && this.reads.get(requestId) === read) {
        const buffer = Buffer.alloc(FOLDER_CHUNK_BYTES);
        const { bytesRead } = await read.file.read(buffer, 0, FOLDER_CHUNK_BYTES, read.sent);
        if (bytesRead === 0) {
          this.send({ type: 'folder.end', requestId });
          return await this.finish(requestId);
        }
        read.sent += bytesRead;
        // The file may have grown since it was opened.
        if (read.sent > read.maxBytes) throw tooLarge(read.key, read.maxBytes);
        read.credit -= 1;
        if (!this.send({ type: 'folder.chunk', requestId, data: buffer.subarray(0, bytesRead).toString('base64') }))
          return await this.finish(requestId);
      }
    } catch (error) {
      this.fail(requestId, error);
    } finally {
      read.busy = false;
    }
  }

  private fail(requestId: string, error: unknown): void {
    const known =
      error instanceof FolderError
        ? error
        : new FolderError('failed', `the agent could not read the folder: ${(error as Error).message}`);
    if (!(error instanceof FolderError))
      this.log('warn', 'a shared folder request failed', { error: (error as Error).message });
    this.send({ type: 'folder.error', requestId, error: known.kind, message: known.message });
    void this.finish(requestId);
  }

  private async finish(requestId: string, error?: FolderError): Promise<void> {
    const read = this.reads.get(requestId);
    if (!read) return;
    this.reads.delete(requestId);
    clearTimeout(read.timer);
    if (error) this.send({ type: 'folder.error', requestId, error: error.kind, message: error.message });
    await read.file.close().catch(() => undefined);
  }
}
