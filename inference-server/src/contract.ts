// The contract between a deployment's inference server (this package, run by a worker agent as a service job) and
// those who call it: the control plane's proxy and health checks, and the agent that starts it. Nothing here runs.

/** The server's command line in a service job (JobSpec.environment 'inference'): the agent runs it with its own Node. */
export const INFERENCE_SERVER = 'vp-inference-server';
/** The port the server listens on inside its container; the process runtime sets PORT instead. */
export const SERVICE_PORT = 8080;

/** Environment of the server. */
export const SERVER_ENV = {
  /** The ONNX export to serve, a path relative to the job's work dir (a JobSpec input). */
  model: 'VP_MODEL_FILE',
  /** The port to listen on (default SERVICE_PORT). */
  port: 'PORT',
  /** Every request but GET /health must carry `Authorization: Bearer <token>`: the control plane's, per revision. */
  token: 'VP_SERVICE_TOKEN',
  /** onnxruntime intra-op threads (default: the CPUs the job was given, at least 1). */
  threads: 'VP_INTRA_OP_THREADS',
  /** The largest request body in bytes (413 past it); the control plane's PREDICT_MAX_BYTES. */
  maxBytes: 'VP_MAX_BYTES',
  /** onnxruntime execution provider: cpu (default) or cuda where the host gave the job a GPU. */
  device: 'VP_DEVICE',
  /** owner/project/model, answered as predict's metadata.model (default: the ONNX file's name). */
  modelName: 'VP_MODEL_NAME',
  /** The ffmpeg that reads the camera (default: `ffmpeg` on PATH). */
  ffmpeg: 'VP_FFMPEG',
} as const;

/**
 * The server's other command (the arguments after INFERENCE_SERVER): embeds a chunk of a dataset's images with the
 * appliance's image embedder and exits, a dataset analysis's host job (not a service). Its environment is EMBED_ENV;
 * it writes EMBED_FILES into its work dir, which the job's outputs upload.
 */
export const EMBED_COMMAND = 'embed';
/** The most images one embedding job takes. */
export const MAX_EMBED_IMAGES = 256;
/** The largest vector the embedding job may give (float32 values). */
export const MAX_EMBED_DIMS = 16_384;

export const EMBED_ENV = {
  /** The embedder's ONNX file, relative to the work dir (a JobSpec input). */
  model: SERVER_ENV.model,
  /** The EmbedManifest (JSON), relative to the work dir (a JobSpec input). */
  manifest: 'VP_EMBED_MANIFEST',
  /** cuda where the job was given a GPU (cpu is used, and said, when the CUDA provider does not load), else cpu. */
  device: SERVER_ENV.device,
  /** The input normalisation, three comma-separated numbers each: the control plane's EMBEDDING_MODEL_MEAN / _STD. */
  mean: 'VP_EMBED_MEAN',
  std: 'VP_EMBED_STD',
  /** The largest image file it downloads, in bytes (larger counts as a failed download). */
  maxBytes: SERVER_ENV.maxBytes,
  /** onnxruntime intra-op threads (default: every CPU). */
  threads: SERVER_ENV.threads,
} as const;

export const EMBED_FILES = {
  /** EmbedResult (JSON). */
  result: 'embeddings.json',
  /** The vectors of the images embedded, in manifest order, float32 little-endian, dims values each. */
  vectors: 'vectors.f32',
} as const;

export interface EmbedManifest {
  /** Signed download URLs of the images, at most MAX_EMBED_IMAGES. */
  images: Array<{ url: string }>;
}

export interface EmbedResult {
  /** Where the model ran. */
  device: 'cpu' | 'cuda';
  /** Why cuda was asked for and cpu used, when it was. */
  deviceNote?: string;
  /** Values per vector; 0 when no image was embedded. */
  dims: number;
  /** Per manifest image, in order: null when embedded (its vector is the next in EMBED_FILES.vectors), else why not. */
  images: Array<null | { stage: 'download' | 'decode'; reason: string }>;
}

export const SERVICE_ROUTES = {
  /** GET, no key: 200 HealthAnswer once the model is loaded, 503 before. */
  health: '/health',
  /**
   * POST: the body of POST /api/models/{owner}/{project}/{model}/predict (multipart file, or base64 / data-URI source in
   * a form or JSON; an http(s) source is resolved by the control plane before it forwards), the same response.
   */
  predict: '/predict',
  /**
   * The deployment's camera: the server reads an RTSP stream (ffmpeg, over TCP, frames scaled to at most 1280 pixels a
   * side) at the settings' fps and predicts each frame as predict does (its conf, iou and imgsz; the newest frame
   * when predicting falls behind, the others dropped). GET: CameraState. PUT CameraSettings (JSON): starts the stream,
   * or replaces the one running; 400 `{ error }` for bad settings, the camera unchanged. DELETE: stops it. A stream
   * that fails or stalls is retried, 2 s after the failure growing to 30 s.
   */
  camera: '/camera',
} as const;

export interface HealthAnswer {
  healthy: boolean;
  task: string;
  /** The served ONNX file's SHA-256, so a health check proves which revision answered. */
  modelSha256: string;
}

export interface CameraSettings {
  /** rtsp:// or rtsps://, credentials in it if the camera wants them. */
  url: string;
  /** Frames read (and predicted) per second, 0.1 to 30. */
  fps: number;
  /** As predict's parameters of the same names, with the same ranges and defaults. */
  conf?: number;
  iou?: number;
  imgsz?: number;
}

export interface CameraState {
  /** The camera's URL, its password masked (***); null when off. */
  url: string | null;
  /** Frames per second, when on. */
  fps?: number;
  /** off, connecting (starting ffmpeg, or retrying), streaming (frames arrive), failed (retried after a pause). */
  state: 'connecting' | 'streaming' | 'failed' | 'off';
  /** Why it failed: ffmpeg's last words, or the stall. */
  error?: string;
  /** Counted since the PUT that set this camera, across reconnects. */
  framesRead: number;
  framesPredicted: number;
  /** Frames skipped because the previous one was still being predicted. */
  framesDropped: number;
  /** The newest predicted frame's results as predict's `images[0].results`, and when that frame was read. */
  latest?: { at: string; results: unknown[] };
  /** Detections per class name in the newest predicted frame (empty for classify, semantic and depth models). */
  counts: Record<string, number>;
}

/**
 * What the server writes to stdout, one JSON object per line (the agent forwards it as job.log; the control plane
 * keeps it as the deployment's log): its start, model load, camera events and errors. Requests are recorded by the
 * control plane, which sees every one.
 */
export interface ServiceLogLine {
  severity: 'DEBUG' | 'INFO' | 'NOTICE' | 'WARNING' | 'ERROR' | 'CRITICAL';
  message: string;
  time: string;
}
