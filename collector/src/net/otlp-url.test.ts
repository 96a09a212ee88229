import { describe, expect, it } from 'vitest';
import { otlpSignalUrl } from './otlp-url.ts';

describe('OTLP signal URLs', () => {
  it('put /v1/<signal> after the endpoint path and keep its query, as OTEL_EXPORTER_OTLP_ENDPOINT is read', () => {
    expect(otlpSignalUrl(new URL('https://otlp.example.com/otlp/?api-key=K#x'), 'logs')).toBe('https://otlp.example.com/otlp/v1/logs?api-key=K');
    expect(otlpSignalUrl(new URL('http://127.0.0.1:4318'), 'metrics')).toBe('http://127.0.0.1:4318/v1/metrics');
    // A base endpoint is always a base: a path that happens to end in /v1/logs still gets the signal's path.
    expect(otlpSignalUrl(new URL('http://collector/v1/logs'), 'logs')).toBe('http://collector/v1/logs/v1/logs');
  });

  it('keep a signal\'s full URL where one is allowed', () => {
    expect(otlpSignalUrl(new URL('http://hookwatch:4318/v1/logs/?k=1'), 'logs', { fullAllowed: true })).toBe('http://hookwatch:4318/v1/logs?k=1');
    expect(otlpSignalUrl(new URL('http://hookwatch:4318/v1/traces'), 'logs', { fullAllowed: true })).toBe('http://hookwatch:4318/v1/traces/v1/logs');
  });
});
