// What the pool (inference-pool.ts) and its worker processes (inference-worker.ts) say to each other.
import type { ExecutionProvider, ModelInfo, Prediction, PredictOptions } from '../index.ts';

export interface WorkerSetup {
  intraOpThreads: number;
  spinning: boolean;
  executionProvider?: ExecutionProvider;
}

export type WorkerRequest =
  | {
      kind: 'run';
      id: number;
      /** Which session: the ONNX artifact's identity (its blob key). */
      sessionKey: string;
      /** The local ONNX file the session loads from when the worker does not hold it yet. */
      file: string;
      image: Uint8Array;
      options: PredictOptions;
      maxPixels: number;
    }
  /** Loads the session now (a server that must be ready before its first request). */
  | { kind: 'load'; id: number; sessionKey: string; file: string }
  | { kind: 'release'; sessionKey: string };

/** cause: 'image': the bytes are not a usable image (400); 'model': the ONNX file did not load or its run gave what no export gives; 'internal': anything else. */
/** invalidFile: the ONNX file itself is not a runnable export (InvalidModel at load): it never will be. */
export type WorkerFailure = {
  id: number;
  ok: false;
  cause: 'image' | 'model' | 'internal';
  message: string;
  invalidFile?: boolean;
};
/**
 * footprintBytes: how much the process's resident memory grew while the session loaded and ran so far (what the pool
 * accounts for it): onnxruntime's arena keeps the peak of the largest run.
 */
export type WorkerReply =
  { id: number; ok: true; prediction: Prediction; info: ModelInfo; footprintBytes: number } | WorkerFailure;
export type LoadReply = { id: number; ok: true; info: ModelInfo; footprintBytes: number } | WorkerFailure;
