/**
 * Refusals of what the parser cannot read, on a connection whose earlier requests are still being answered.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { rawExchange } from '../../test/support/raw-http.ts';
import { answerParserRefusals } from './parser-refusals.ts';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server answering each request with `answer <path>` after the delay its path names, refusing what it cannot parse. */
async function delayedServer(delays: Record<string, number>): Promise<string> {
  server = createServer((req, res) => {
    setTimeout(() => res.end(`answer ${req.url}`), delays[req.url ?? ''] ?? 0);
  });
  answerParserRefusals(server, (refusal) => ({ contentType: 'text/plain', body: `refused: ${refusal}` }));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

/** The bodies of the answers in `raw`, in order, each with its status. */
function answers(raw: string): string[] {
  return [...raw.matchAll(/HTTP\/1\.1 (\d{3}) [^]*?\r\n\r\n(answer \/\w|refused: \w+)/g)].map((m) => `${m[1]} ${m[2]}`);
}

it('requests pipelined before bytes that are not HTTP are each answered, in order, before the refusal of those bytes', async () => {
  const cases: Record<string, number>[] = [{ '/a': 100, '/b': 300 }, { '/a': 300, '/b': 100 }, { '/a': 100, '/b': 200, '/c': 0 }];
  for (const delays of cases) {
    const url = await delayedServer(delays);
    const paths = Object.keys(delays);
    const answer = await rawExchange(url, paths.map(get).join('') + 'HELLO\r\n\r\n');
    const raw = answer.head + '\r\n\r\n' + answer.body.toString('latin1');
    expect(answers(raw), JSON.stringify(delays)).toEqual([...paths.map((path) => `200 answer ${path}`), '400 refused: malformed']);
    expect(raw).toMatch(/\r\nConnection: close\r\n\r\nrefused: malformed$/);
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  }
});
