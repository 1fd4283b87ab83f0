import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** What Node's HTTP parser reports, and the answer a client gets for it. */
function answerFor(code: string | undefined): { status: number; error: string } {
  if (code === 'HPE_HEADER_OVERFLOW')
    return { status: 431, error: `Request headers larger than ${maxHeaderSize} bytes` };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, error: 'Request headers not received in time' };
  return { status: 400, error: 'Malformed HTTP request' };
}

/**
 * Node's `clientError` handler: a request the HTTP parser refuses (headers too large, malformed) gets the
 * same `{ error }` JSON body as every other error instead of Node's bare status line. As Node itself does,
 * it answers only while nothing has been written on the connection, then closes it.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex & { bytesWritten?: number }): void {
  if (!socket.writable || socket.bytesWritten !== 0) {
    socket.destroy();
    return;
  }
  const { status, error: message } = answerFor(error.code);
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
