import type { Middleware } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import type { AppState } from './app-context.ts';
import { HttpError } from './errors.ts';

/**
 * Strict JSON parsing with a size limit. Run by the router only for routes that declare a body, so
 * streamed uploads reach their handler untouched, whatever Content-Type they carry.
 */
export function jsonBody(limitBytes: number): Middleware<AppState> {
  return koaBody({
    jsonLimit: limitBytes,
    jsonStrict: true,
    multipart: false,
    urlencoded: false,
    text: false,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
    onError: (error) => {
      const status = (error as { status?: number }).status;
      if (status === 413) throw new HttpError(413, `Request body larger than ${limitBytes} bytes`);
      throw new HttpError(400, 'Malformed JSON body');
    },
  }) as unknown as Middleware<AppState>;
}
