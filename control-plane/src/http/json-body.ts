import type { Middleware } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import type { AppState } from './app-context.ts';
import { HttpError } from './errors.ts';

/**
 * The JSON body of an operation whose fields are names, IDs and settings (at most 1,000 IDs, a 4,096-character URL):
 * far inside this. Operations whose body may carry a document declare `documentBody` and get JSON_BODY_LIMIT_BYTES
 * (which, set lower than this, bounds every JSON body).
 */
export const JSON_FIELDS_LIMIT_BYTES = 64 * 1024;

/**
 * Strict JSON parsing with a size limit: a body announced larger is 413 before a byte is read, one that grows past it
 * 413 as it does, never parsed. Run by the router only for routes that declare a body, so streamed uploads reach
 * their handler untouched, whatever Content-Type they carry.
 */
export function jsonBody(limitBytes: number, setting?: string): Middleware<AppState> {
  return koaBody({
    jsonLimit: limitBytes,
    jsonStrict: true,
    multipart: false,
    urlencoded: false,
    text: false,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
    onError: (error) => {
      const status = (error as { status?: number }).status;
      if (status === 413)
        throw new HttpError(
          413,
          `Request body larger than ${limitBytes} bytes${setting ? ` (${setting})` : ', the most this operation takes'}`,
        );
      throw new HttpError(400, 'Malformed JSON body');
    },
  }) as unknown as Middleware<AppState>;
}
