/** Listen addresses: how they split, which are loopback, and the URL a person opens to reach one. */
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { isLoopbackAddr, reachableHost, reachableUrl, splitAddr } from './addr.ts';

const machine = (): string => 'hookwatch-1.example.internal';

describe('listen addresses', () => {
  it('split into host and port; an empty host listens everywhere', () => {
    expect(splitAddr('127.0.0.1:9318')).toEqual({ host: '127.0.0.1', port: 9318 });
    expect(splitAddr('[::1]:9318')).toEqual({ host: '::1', port: 9318 });
    expect(splitAddr(':9318')).toEqual({ host: '0.0.0.0', port: 9318 });
    expect(isLoopbackAddr('127.0.0.1:9318')).toBe(true);
    expect(isLoopbackAddr('0.0.0.0:9318')).toBe(false);
  });

  it('are reached at their own host, or at the machine name when they listen on every interface (as Alertmanager defaults its external URL)', () => {
    expect(reachableUrl('127.0.0.1:9318', { machine })).toBe('http://127.0.0.1:9318');
    expect(reachableUrl('localhost:9318', { machine })).toBe('http://localhost:9318');
    expect(reachableUrl('10.1.2.3:9318', { machine })).toBe('http://10.1.2.3:9318');
    expect(reachableUrl('[::1]:9318', { machine })).toBe('http://[::1]:9318');
    for (const wildcard of ['0.0.0.0:9318', ':9318', '[::]:9318', '[0:0:0:0:0:0:0:0]:9318']) {
      expect(reachableUrl(wildcard, { machine }), wildcard).toBe('http://hookwatch-1.example.internal:9318');
    }
    expect(reachableHost('0.0.0.0:9318')).toBe(hostname());
    expect(reachableHost('[::]:9318', () => 'fe80::1')).toBe('[fe80::1]');
  });

  it('asking for any free port (:0) are reached at the port bound, and have no URL before it is', () => {
    expect(reachableUrl('127.0.0.1:0', { boundPort: 40123, machine })).toBe('http://127.0.0.1:40123');
    expect(reachableUrl('0.0.0.0:0', { boundPort: 40123, machine })).toBe('http://hookwatch-1.example.internal:40123');
    expect(reachableUrl('127.0.0.1:0', { machine })).toBe('');
    // A fixed port is the port.
    expect(reachableUrl('127.0.0.1:9318', { boundPort: 40123, machine })).toBe('http://127.0.0.1:9318');
  });

  it('speaking TLS are reached over https', () => {
    expect(reachableUrl('0.0.0.0:9318', { tls: true, machine })).toBe('https://hookwatch-1.example.internal:9318');
  });
});
