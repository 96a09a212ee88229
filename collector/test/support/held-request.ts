/**
 * An OTLP/HTTP request its client holds open, as a slow upload does: the headers and the first half of the body
 * are sent at once, the rest when finish() is called, or never (a hung client) unless the request is destroyed.
 */
import { request, type ClientRequest } from 'node:http';

export interface HeldRequest {
  req: ClientRequest;
  /** Sends the rest of the body; resolves to the status of the answer (0 when the request failed). */
  finish(): Promise<number>;
}

/** Opens a POST of `body` to base's /v1/logs and holds the second half of it (see HeldRequest). */
export function holdRequest(base: string, body = `{"resourceLogs": [${' '.repeat(1000)}]}`): Promise<HeldRequest> {
  const url = new URL('/v1/logs', base);
  const bytes = Buffer.from(body);
  const half = Math.floor(bytes.length / 2);
  const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) } });
  // Never rejects: a request cut off (a hung client destroyed, a server that went away) answers 0.
  const answered = new Promise<number>((resolve) => {
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
  });
  return new Promise((resolve) => {
    req.write(bytes.subarray(0, half), () => resolve({ req, finish: () => (req.end(bytes.subarray(half)), answered) }));
  });
}
