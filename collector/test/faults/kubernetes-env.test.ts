/**
 * Kubernetes injects service-link variables for every Service in the namespace; for a Service named hookwatch
 * they all start with HOOKWATCH_. The real CLI must start with them set (the second rollout of the shipped
 * manifests used to crash-loop on them), and a real typo must still be visible as a warning naming the setting
 * that was probably meant.
 */
import { describe, expect, it } from 'vitest';
import { cliPerTest } from './cli-child.ts';

const start = cliPerTest();

/** What the kubelet sets for the Service in deploy/kubernetes/base/service.yaml (and a second one, hookwatch-otlp). */
const SERVICE_LINKS: Record<string, string> = {
  HOOKWATCH_SERVICE_HOST: '10.96.12.7',
  HOOKWATCH_SERVICE_PORT: '4317',
  HOOKWATCH_SERVICE_PORT_OTLP_GRPC: '4317',
  HOOKWATCH_SERVICE_PORT_OTLP_HTTP: '4318',
  HOOKWATCH_SERVICE_PORT_HTTP: '9318',
  HOOKWATCH_PORT: 'tcp://10.96.12.7:4317',
  HOOKWATCH_PORT_4317_TCP: 'tcp://10.96.12.7:4317',
  HOOKWATCH_PORT_4317_TCP_PROTO: 'tcp',
  HOOKWATCH_PORT_4317_TCP_PORT: '4317',
  HOOKWATCH_PORT_4317_TCP_ADDR: '10.96.12.7',
  HOOKWATCH_PORT_4318_TCP: 'tcp://10.96.12.7:4318',
  HOOKWATCH_PORT_4318_TCP_ADDR: '10.96.12.7',
  HOOKWATCH_PORT_9318_TCP_PORT: '9318',
  HOOKWATCH_OTLP_SERVICE_HOST: '10.96.12.8',
  HOOKWATCH_OTLP_PORT_4318_TCP_PROTO: 'tcp',
  HOOKWATCH_OTLP_PORT: 'tcp://10.96.12.8:4318',
  HOOKWATCH_HTTP_PORT: 'tcp://10.96.12.9:9318',
};

describe('HOOKWATCH_* variables set by the platform', () => {
  it('starts with Kubernetes service-link variables set, and warns about a typo with the nearest setting', async () => {
    const cli = await start({ ...SERVICE_LINKS, HOOKWATCH_LOG_LEVLE: 'debug', HOOKWATCH_RETENTON_EVENTS: '7d' });
    const health = await fetch(`${cli.http}/healthz`);
    expect(health.status).toBe(200);

    const warnings = cli.logs.filter((l) => l['level'] === 'warn').map((l) => String(l['msg']));
    expect(warnings).toContainEqual(expect.stringMatching(/HOOKWATCH_LOG_LEVLE.*did you mean HOOKWATCH_LOG_LEVEL\?/));
    expect(warnings).toContainEqual(expect.stringMatching(/HOOKWATCH_RETENTON_EVENTS.*did you mean HOOKWATCH_RETENTION_EVENTS\?/));
    // Service links are expected, not mistakes: no warning names them.
    for (const name of Object.keys(SERVICE_LINKS)) expect(warnings.join('\n')).not.toContain(name);
  });

  it('warns about a port set as HOOKWATCH_<...>_PORT by a person, naming the address setting and how to write it', async () => {
    // A service link's <SERVICE>_PORT is always a URL (tcp://10.96.12.7:4317); a bare port number is a person's guess.
    const cli = await start({ HOOKWATCH_HTTP_PORT: '61122', HOOKWATCH_OTLP_HTTP_PORT: '61120', HOOKWATCH_PORT: '8080', HOOKWATCH_GRPC_PORT: '61121' });
    expect((await fetch(`${cli.http}/healthz`)).status).toBe(200);
    const warnings = cli.logs.filter((l) => l['level'] === 'warn').map((l) => String(l['msg']));
    expect(warnings).toEqual(expect.arrayContaining([
      'environment: unknown variable HOOKWATCH_HTTP_PORT is ignored; did you mean HOOKWATCH_HTTP_ADDR=127.0.0.1:61122? (an address is host:port)',
      'environment: unknown variable HOOKWATCH_OTLP_HTTP_PORT is ignored; did you mean HOOKWATCH_OTLP_HTTP_ADDR=127.0.0.1:61120? (an address is host:port)',
      'environment: unknown variable HOOKWATCH_PORT is ignored; did you mean HOOKWATCH_HTTP_ADDR=127.0.0.1:8080? (an address is host:port)',
      'environment: unknown variable HOOKWATCH_GRPC_PORT is ignored; did you mean HOOKWATCH_OTLP_GRPC_ADDR=127.0.0.1:61121? (an address is host:port)',
    ]));
  });
});
