/** hookwatch's own log: JSON lines with levels, and secrets scrubbed whatever field or escaping they end up in. */
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.ts';
import { urlPasswords } from '../config/values.ts';
import { redactUrlCredentials } from '../net/otlp-url.ts';

function capture(level: 'debug' | 'info' | 'warn' | 'error', secrets: string[] = []): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level, secrets, write: (l) => lines.push(l), now: () => new Date('2026-11-30T08:00:00Z') }) };
}

describe('createLogger', () => {
  it('writes one JSON object per line with time, level and message, and drops lines below the level', () => {
    const { lines, logger } = capture('info');
    logger.debug('not shown');
    logger.info('started', { port: 4318 });
    logger.error('failed', { err: new Error('boom') });
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual([
      { time: '2026-11-30T08:00:00.000Z', level: 'info', msg: 'started', port: 4318 },
      { time: '2026-11-30T08:00:00.000Z', level: 'error', msg: 'failed', err: { name: 'Error', message: 'boom', stack: expect.stringContaining('logger.test.ts') as unknown } },
    ]);
  });

  it('keeps an error\'s name, code, stack and cause chain, bounded, with secrets scrubbed from all of them', () => {
    const token = 'tok-0123456789';
    const { lines, logger } = capture('error', [token]);
    const refused = Object.assign(new Error(`connect ECONNREFUSED with ${token}`), { code: 'ECONNREFUSED' });
    const err = new TypeError('fetch failed', { cause: new AggregateError([refused], 'all addresses failed', { cause: 'plain reason' }) });
    logger.error('api request failed', { err });
    const line = lines[0] as string;
    expect(line).not.toContain(token);
    const logged = (JSON.parse(line) as { err: Record<string, unknown> }).err;
    expect(logged).toMatchObject({
      name: 'TypeError',
      message: 'fetch failed',
      stack: expect.stringMatching(/^TypeError: fetch failed\n\s+at .*logger\.test\.ts/) as unknown,
      cause: {
        name: 'AggregateError',
        message: 'all addresses failed',
        stack: expect.stringContaining('AggregateError') as unknown,
        errors: [{ name: 'Error', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED with <redacted>', stack: expect.stringContaining('<redacted>') as unknown }],
        cause: 'plain reason',
      },
    });

    // A cycle (or a very long chain) ends after a few causes instead of recursing for ever.
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    logger.error('cycle', { err: a });
    let depth = 0;
    for (let e = (JSON.parse(lines[1] as string) as { err: { cause?: unknown } }).err; typeof e === 'object'; e = e.cause as { cause?: unknown }) depth++;
    expect(depth).toBe(5);
    expect(lines[1]).toContain('more causes not shown');
  });

  it('scrubs secrets from messages, fields and error messages, also where JSON escapes them', () => {
    const password = 'pa"ss\\word-42';
    const token = 'tok-0123456789';
    const { lines, logger } = capture('debug', [password, token]);
    logger.warn(`cannot connect with ${token}`, { url: `postgres://u:${password}@db/x`, err: new Error(`auth failed for ${password}`), nested: { headers: { authorization: `Bearer ${token}` } } });
    expect(lines).toHaveLength(1);
    const line = lines[0] as string;
    expect(line).not.toContain(token);
    expect(line).not.toContain(password);
    expect(line).not.toContain(JSON.stringify(password).slice(1, -1));
    expect(line).not.toContain('pa\\"ss');
    expect(JSON.parse(line)).toMatchObject({ msg: 'cannot connect with <redacted>', nested: { headers: { authorization: 'Bearer <redacted>' } } });
  });

  it('scrubs the secrets added later (a reloaded configuration\'s) as well as the first ones', () => {
    const first = 'tok-0123456789';
    const added = 'https://hooks.example/T000/B000/added-later';
    const { lines, logger } = capture('info', [first]);
    logger.addSecrets?.([added, 'abc']);
    logger.info('notification not delivered', { url: added, token: first, short: 'abc' });
    expect(JSON.parse(lines[0] as string)).toMatchObject({ url: '<redacted>', token: '<redacted>', short: 'abc' });
  });
});

describe('urlPasswords', () => {
  it('finds the password of a database URL, as written and decoded', () => {
    expect(urlPasswords('postgres://hookwatch:s3cr%40t%21@db:5432/hookwatch')).toEqual(['s3cr%40t%21', 's3cr@t!']);
    expect(urlPasswords('postgres://hookwatch@db/hookwatch')).toEqual([]);
    expect(urlPasswords('./data/hookwatch.db')).toEqual([]);
    // libpq also takes it from the query string.
    expect(urlPasswords('postgres://hookwatch@db/hookwatch?sslmode=require&password=Kv%26SECRET7')).toEqual(['Kv&SECRET7', 'Kv%26SECRET7']);
  });

  it('finds it in a URL the parser refuses too (a bad port), and redactUrlCredentials hides it in any text', () => {
    expect(urlPasswords('http://u:AlertPW1@127.0.0.1:notaport/v1/logs')).toEqual(['AlertPW1']);
    expect(redactUrlCredentials("Could not parse 'http://u:AlertPW1@127.0.0.1:notaport/v1/logs' or postgres://a:b%40c@db/x"))
      .toBe("Could not parse 'http://u:<redacted>@127.0.0.1:notaport/v1/logs' or postgres://a:<redacted>@db/x");
    expect(redactUrlCredentials('http://user@host/x and a:b@c')).toBe('http://user@host/x and a:b@c');
    // An unencoded '@' in the password: parsers split at the authority's last '@', so all of it is the password.
    expect(urlPasswords('http://u:p@ss@127.0.0.1:notaport/v1/logs')).toEqual(['p@ss']);
    expect(redactUrlCredentials('posting to http://u:p@ss@host:4318/v1/logs failed; see http://other/x@y'))
      .toBe('posting to http://u:<redacted>@host:4318/v1/logs failed; see http://other/x@y');
    // An address written after the URL is not taken for part of its password.
    expect(redactUrlCredentials('http://u:p@host:4318,ops@corp.com')).toBe('http://u:<redacted>@host:4318,ops@corp.com');
    expect(redactUrlCredentials('<http://u:p@host>,<mailto:x@y>')).toBe('<http://u:<redacted>@host>,<mailto:x@y>');
    // A special scheme's authority read after no slash, one, or backslashes, as URL parsers read it.
    expect(redactUrlCredentials('to https:/u:AlertPW1@h/ or https:u:AlertPW1@h or http:\\\\u:AlertPW1@h or ws:///u:AlertPW1@h'))
      .toBe('to https:/u:<redacted>@h/ or https:u:<redacted>@h or http:\\\\u:<redacted>@h or ws:///u:<redacted>@h');
    expect(urlPasswords('https:u:AlertPW1@127.0.0.1:notaport/')).toEqual(['AlertPW1']);
    expect(redactUrlCredentials('error: a:b@c, mailto:ops:x@y')).toBe('error: a:b@c, mailto:ops:x@y');
  });

  it('with the logger, keeps a database password out of a line that quotes the connection error', () => {
    const url = 'postgres://hookwatch:s3cr%40t%21@db:5432/hookwatch';
    const { lines, logger } = capture('info', urlPasswords(url));
    logger.error('store failed', { err: new Error('password "s3cr@t!" rejected'), db: url });
    expect(lines[0]).not.toContain('s3cr');
  });
});
