/** An error that maps to an HTTP status and a `{ error }` body; thrown anywhere, answered in one place. */
export class HttpError extends Error {
  readonly status: number;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    message: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = status;
    this.extra = extra;
    this.headers = headers;
  }
}

export const Invalid = (message: string) => new HttpError(400, message);
export const Unauthorized = (message = 'Invalid API key') => new HttpError(401, message);
export const PaymentRequired = (message: string) => new HttpError(402, message);
export const Forbidden = (message = 'Permission denied for this operation') => new HttpError(403, message);
export const NotFound = (message = 'Not found') => new HttpError(404, message);
export const MethodNotAllowed = (allowed: string[]) =>
  new HttpError(405, `Method not allowed; use ${allowed.join(', ')}`, {}, { Allow: allowed.join(', ') });
export const Conflict = (message: string) => new HttpError(409, message);
export const PayloadTooLarge = (message: string) => new HttpError(413, message);
export const NotImplemented = (message: string) => new HttpError(501, message);
export const BadGateway = (message: string) => new HttpError(502, message);
export const Unavailable = (message: string) => new HttpError(503, message);
export const GatewayTimeout = (message: string) => new HttpError(504, message);

export const OWNER_REQUIRED = 'Workspace owner access required';
