/** A predict request the caller got wrong: 400 (bad parameters, not an image, video) or 413 (past the byte bound). */
export class PredictInputError extends Error {
  override name = 'PredictInputError';
  readonly status: 400 | 413;

  constructor(status: 400 | 413, message: string) {
    super(message);
    this.status = status;
  }
}

export const invalid = (message: string) => new PredictInputError(400, message);

/** A 400 naming each field of the body that is wrong (`body.conf: must be …`). */
export const invalidBody = (error: { issues: Array<{ path: PropertyKey[]; message: string }> }) =>
  invalid(error.issues.map((issue) => `${['body', ...issue.path.map(String)].join('.')}: ${issue.message}`).join('; '));

/** Where the byte bound comes from, named in the 413 so the operator knows what to raise. */
export interface ByteBound {
  maxBytes: number;
  /** The setting that holds it (PREDICT_MAX_BYTES on the control plane, VP_MAX_BYTES in a deployment). */
  setting: string;
}

export const tooLarge = ({ maxBytes, setting }: ByteBound) =>
  new PredictInputError(413, `Prediction input larger than ${maxBytes} bytes (${setting})`);
