import { expect, it } from 'vitest';
import { firstBytes } from './plain-http-on-tls.ts';

const of = (s: string | number[]): ReturnType<typeof firstBytes> => firstBytes(typeof s === 'string' ? Buffer.from(s, 'latin1') : Buffer.from(s));

it('a request line is told from its method and a space; anything else goes on to TLS at its first byte that cannot be one', () => {
  for (const method of ['GET', 'POST', 'PUT', 'HEAD', 'OPTIONS', 'DELETE', 'PATCH', 'CONNECT', 'TRACE', 'M-SEARCH', 'BASELINE-CONTROL']) {
    expect(of(`${method} / HTTP/1.1\r\n`), method).toEqual({ method });
    expect(of(`${method} `), method).toEqual({ method });
  }
  // Not yet known: a method's first letters.
  for (const partial of ['', 'P', 'POS', 'POST', 'BASELINE-CONTROL']) expect(of(partial), partial).toBe('more');
  // A TLS ClientHello (a handshake record, 0x16) and other bytes: TLS at once.
  expect(of([0x16, 0x03, 0x01, 0x02, 0x00])).toBe('tls');
  expect(of([0x16])).toBe('tls');
  for (const junk of ['get / HTTP/1.1', 'G3T /', ' GET /', '-GET /', 'GE /', 'GET\t/', 'GET/', 'X'.repeat(21), 'X'.repeat(21) + ' /']) expect(of(junk), junk).toBe('tls');
  // HTTP/2's preface, from a gRPC client in plain text: an HTTP/1 answer would mean nothing to it.
  expect(of('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')).toBe('tls');
  // The longest method taken, and one byte over.
  expect(of(`${'X'.repeat(20)} /`)).toEqual({ method: 'X'.repeat(20) });
  expect(of('X'.repeat(20))).toBe('more');
});
