/** The host a request names, as RFC 9112 reads it: which Host values are a host and port, and which host counts. */
import { describe, expect, it } from 'vitest';
import { hostCheck, isHostAndPort, requestHost, targetAuthority } from './allowed-hosts.ts';

describe('a Host value (RFC 9112 section 3.2: uri-host [ ":" port ])', () => {
  it('is a name, an IPv4 address or a bracketed IPv6 one, with digits after a colon, or nothing', () => {
    for (const host of ['127.0.0.1', '127.0.0.1:9318', 'localhost', 'Dash.Localhost:4318', '[::1]', '[::1]:9318', '[v1.x]', 'my%2Dhost', 'a,b', '127.0.0.1:', '']) {
      expect(isHostAndPort(host), host).toBe(true);
    }
  });

  it('is not a user before @, a path, a space, a second port, an unclosed bracket or a bad escape', () => {
    for (const host of ['127.0.0.1:9318@evil.example', 'evil@127.0.0.1', '127.0.0.1/evil', '127.0.0.1 evil.example', '127.0.0.1:9318:1', '127.0.0.1:x', '[::1', '::1', '[evil.example]', 'a%zz', '[::1]x']) {
      expect(isHostAndPort(host), host).toBe(false);
    }
  });

  it('names a host when it is an http URL\'s authority, which may not be empty (RFC 9110 section 4.2.1)', () => {
    expect(isHostAndPort('127.0.0.1:9318', true)).toBe(true);
    for (const authority of ['', ':9318']) expect(isHostAndPort(authority, true), authority).toBe(false);
    expect(isHostAndPort(':9318')).toBe(true);
  });
});

describe('the host a request names', () => {
  it('is an absolute-form target\'s authority, of any scheme, in place of Host (RFC 9112 section 3.2.2)', () => {
    expect(targetAuthority('http://evil.example:4318/v1/logs')).toBe('evil.example:4318');
    expect(targetAuthority('HTTPS://[::1]:9318?x=1')).toBe('[::1]:9318');
    expect(targetAuthority('foo://evil.example/api/v1/hooks')).toBe('evil.example');
    expect(targetAuthority('http:///api/v1/hooks')).toBe('');
    for (const origin of ['/v1/logs', '/http://evil.example/', '*']) expect(targetAuthority(origin), origin).toBeUndefined();
    expect(requestHost({ url: 'http://evil.example:4318/v1/logs', headers: { host: '127.0.0.1' } })).toBe('evil.example:4318');
    expect(requestHost({ url: '/v1/logs', headers: { host: '127.0.0.1' } })).toBe('127.0.0.1');
  });

  it('is what the allow-list checks on loopback: a rebound name in the target is refused though Host is loopback', () => {
    const check = hostCheck({ addr: '127.0.0.1:4318', allowedHosts: [] });
    expect(check(requestHost({ url: 'http://evil.example:4318/v1/logs', headers: { host: '127.0.0.1' } }))).toMatch(/^host "evil\.example" is not allowed/);
    expect(check(requestHost({ url: 'http://localhost:4318/v1/logs', headers: { host: 'evil.example' } }))).toBeUndefined();
  });
});
