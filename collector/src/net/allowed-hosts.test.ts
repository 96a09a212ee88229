/** The host a request names, as RFC 9112 reads it: which host counts. */
import { describe, expect, it } from 'vitest';
import { hostCheck, requestHost, targetAuthority } from './allowed-hosts.ts';

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
