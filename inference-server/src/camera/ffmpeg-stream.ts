// One ffmpeg process reading a camera: RTSP over TCP, `fps` frames a second, scaled down to at most MAX_SIDE pixels a
// side (never up), as JPEG frames on its stdout. It ends by itself (ffmpeg exited, stalled or sent a frame past the
// bound: `ended` says why, in ffmpeg's words, the URL's password removed) or by stop(). No ffmpeg outlives the server.
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { secretsRemover } from './camera-settings.ts';
import { FrameTooLarge, JpegFrames } from './jpeg-frames.ts';

const MAX_SIDE = 1280;
const MAX_FRAME_BYTES = 16 * 2 ** 20;
/** A stream that sends no frame for this long (or three frame intervals, at low rates) is stalled. */
const STALL_MS = 10_000;
/** What ffmpeg gets to exit by itself (closing the RTSP session) before it is killed. */
const STOP_GRACE_MS = 2_000;
/** ffmpeg's last stderr lines kept for the error, each cut to a length. */
const ERROR_LINES = 3;
const ERROR_LINE_CHARS = 300;

type Ffmpeg = ChildProcessByStdio<null, Readable, Readable>;

/** Every ffmpeg running, killed when the server exits however it exits (an ffmpeg that lost its pipe exits anyway). */
const running = new Set<Ffmpeg>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export interface StreamOptions {
  ffmpeg: string;
  url: string;
  fps: number;
}

export interface StreamEvents {
  frame(jpeg: Buffer): void;
  /** The stream ended without stop(): why. */
  ended(reason: string): void;
}

export class FfmpegStream {
  readonly #child: Ffmpeg;
  readonly #events: StreamEvents;
  readonly #stallMs: number;
  readonly #hideSecrets: (said: string) => string;
  readonly #exited: Promise<void>;
  readonly #stderr = new StderrTail();
  #stall: NodeJS.Timeout | undefined;
  /** Why this side ended it (a stall, a frame too large), or 'stopped' when stop() did. */
  #endedBy: string | undefined;

  constructor(options: StreamOptions, events: StreamEvents) {
    this.#events = events;
    this.#stallMs = Math.max(STALL_MS, 3000 / options.fps);
    this.#hideSecrets = secretsRemover(options.url);
    this.#child = spawn(options.ffmpeg, ffmpegArguments(options), { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(this.#child);
    const frames = new JpegFrames(MAX_FRAME_BYTES);
    this.#child.stdout.on('data', (chunk: Buffer) => {
      if (this.#endedBy) return;
      try {
        for (const frame of frames.push(chunk)) {
          this.#watch();
          this.#events.frame(frame);
        }
      } catch (error) {
        if (!(error instanceof FrameTooLarge)) throw error;
        this.#end(error.message);
      }
    });
    this.#child.stderr.setEncoding('utf8').on('data', (text: string) => this.#stderr.add(text));
    let spawnError: Error | undefined;
    this.#child.once('error', (error) => (spawnError = error));
    this.#exited = new Promise((resolve) => {
      this.#child.once('close', (code, signal) => {
        running.delete(this.#child);
        clearTimeout(this.#stall);
        resolve();
        if (this.#endedBy === 'stopped') return;
        const exit = spawnError
          ? `ffmpeg could not be started (${spawnError.message})`
          : `ffmpeg exited (${signal ?? `code ${code}`})`;
        const said = this.#stderr.text();
        this.#events.ended(this.#hideSecrets(`${this.#endedBy ?? exit}${said ? `: ${said}` : ''}`));
      });
    });
    this.#watch();
  }

  /** Ends ffmpeg (killed if it does not exit within the grace); resolves once it has exited. */
  stop(): Promise<void> {
    this.#end('stopped');
    return this.#exited;
  }

  #end(reason: string): void {
    if (this.#endedBy) return;
    this.#endedBy = reason;
    clearTimeout(this.#stall);
    this.#child.kill('SIGTERM');
    setTimeout(() => this.#child.kill('SIGKILL'), STOP_GRACE_MS).unref();
  }

  /** (Re)arms the stall timer: no frame within it ends the stream. */
  #watch(): void {
    clearTimeout(this.#stall);
    this.#stall = setTimeout(() => this.#end(`no frame for ${Math.round(this.#stallMs / 1000)} s`), this.#stallMs);
  }
}

function ffmpegArguments({ url, fps }: StreamOptions): string[] {
  const scale = `scale=w='min(iw,${MAX_SIDE})':h='min(ih,${MAX_SIDE})':force_original_aspect_ratio=decrease`;
  return [
    ['-hide_banner', '-nostdin', '-loglevel', 'error'],
    ['-rtsp_transport', 'tcp', '-i', url],
    ['-an', '-sn', '-dn', '-vf', `fps=${fps},${scale}`],
    ['-c:v', 'mjpeg', '-q:v', '3', '-f', 'image2pipe', 'pipe:1'],
  ].flat();
}

const withoutPrefix = (line: string) => line.trim().replace(/^\[[^\]]* @ 0x[0-9a-f]+\]\s*/, '');

/** The last few lines ffmpeg wrote (without its `[tcp @ 0x…]` prefixes), bounded however much it writes. */
class StderrTail {
  #lines: string[] = [];
  #partial = '';

  add(text: string): void {
    const lines = (this.#partial + text).split(/\r?\n|\r/);
    this.#partial = lines.pop()!.slice(-ERROR_LINE_CHARS);
    for (const line of lines.map(withoutPrefix)) if (line) this.#lines.push(line.slice(0, ERROR_LINE_CHARS));
    this.#lines = this.#lines.slice(-ERROR_LINES);
  }

  text(): string {
    return [...this.#lines, withoutPrefix(this.#partial)].filter(Boolean).slice(-ERROR_LINES).join(' | ');
  }
}
