/** Hashing and dropping attributes before storage, and the settings that choose them. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, toConfig } from '../config/index.ts';
import type { HookEvent } from '../hooks/model.ts';
import { SqliteStore } from '../store/sqlite/index.ts';
import { HASH_KEY_META, Privacy, openPrivacy } from './index.ts';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function event(over: Partial<HookEvent> = {}): HookEvent {
  return {
    kind: 'complete', dedupKey: 'k', hookId: 'h', hookEvent: 'Stop', hookName: 'Stop', timeMs: 0, numHooks: 1, numSuccess: 1, numBlocking: 0,
    numNonBlockingError: 0, numCancelled: 0, durationMs: 1, stdoutChars: 1, additionalContextChars: 0, systemMessageChars: 0,
    initialUserMessageChars: 0, outputsPersisted: 0, sizesKnown: true, status: 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332',
    sessionId: 'session-1', userId: 'user-hash', userEmail: 'dev@example.com', userAccountUuid: 'acc-1', organizationId: 'org-1',
    terminalType: 'vscode', source: 'otlp', extra: { team: 'platform', 'workflow.name': 'ci' }, ...over,
  };
}

describe('Privacy', () => {
  const key = Buffer.from('k'.repeat(32));

  it('digests hashed attributes (built-in and configured), removes dropped ones, leaves the rest', () => {
    const p = new Privacy({ hash: ['user.email', 'team'], drop: ['organization.id', 'workflow.name'], key });
    const out = p.apply(event());
    expect(out.userEmail).toMatch(/^hmac:[0-9a-f]{32}$/);
    expect(out.extra['team']).toMatch(/^hmac:[0-9a-f]{32}$/);
    expect(out.organizationId).toBe('');
    expect(out.extra).not.toHaveProperty('workflow.name');
    expect(out).toMatchObject({ sessionId: 'session-1', userAccountUuid: 'acc-1', serviceVersion: '2.1.332', hookName: 'Stop' });
    // Grouping still works: the same value gives the same digest, another value another digest.
    expect(p.apply(event()).userEmail).toBe(out.userEmail);
    expect(p.apply(event({ userEmail: 'other@example.com' })).userEmail).not.toBe(out.userEmail);
    // Absent stays absent.
    expect(p.apply(event({ userEmail: '' })).userEmail).toBe('');
  });

  it('passes on an event it would not change as it is, and copies one it changes, leaving the original as it was', () => {
    const p = new Privacy({ hash: ['user.email', 'team'], drop: ['organization.id', 'workflow.name'], key });
    const untouched = event({ userEmail: '', organizationId: '', extra: { team: 'hmac:0123456789abcdef0123456789abcdef' } });
    expect(p.apply(untouched)).toBe(untouched);
    const changes: Partial<HookEvent>[] = [{ userEmail: 'dev@example.com' }, { organizationId: 'org-1' }, { extra: { 'workflow.name': 'ci' } }, { extra: { team: 'platform' } }];
    for (const over of changes) {
      const e = event({ userEmail: '', organizationId: '', extra: {}, ...over });
      const before = structuredClone(e);
      const out = p.apply(e);
      expect(out).not.toBe(e);
      expect(out).not.toEqual(e);
      expect(e).toEqual(before);
    }
  });

  it('depends on the key: without it a digest cannot be recomputed from a guessed address', () => {
    const a = new Privacy({ hash: ['user.email'], drop: [], key }).apply(event()).userEmail;
    const b = new Privacy({ hash: ['user.email'], drop: [], key: Buffer.from('another key') }).apply(event()).userEmail;
    expect(a).not.toBe(b);
  });

  it('digests a cleartext filter value for a hashed attribute the same way, and passes a digest and other filters through', () => {
    const p = new Privacy({ hash: ['user.email'], drop: [], key });
    const stored = p.apply(event()).userEmail;
    expect(p.filters({ 'user.email': 'dev@example.com', team: 'platform' })).toEqual({ 'user.email': stored, team: 'platform' });
    expect(p.filters({ 'user.email': stored })).toEqual({ 'user.email': stored });
  });
});

describe('privacy settings', () => {
  it('hash user.email by default, drop nothing', () => {
    expect(toConfig(loadConfig({ env: {} })).privacy).toEqual({ hash: ['user.email'], hashKey: '', drop: [] });
  });

  it.each([
    [{ HOOKWATCH_PRIVACY_HASH: 'user.emial' }, /privacy\.hash: "user\.emial" is not an attribute hookwatch stores/],
    [{ HOOKWATCH_PRIVACY_DROP: 'workflow.name' }, /privacy\.drop: "workflow\.name" is not an attribute/],
    [{ HOOKWATCH_PRIVACY_HASH: 'user.email', HOOKWATCH_PRIVACY_DROP: 'user.email' }, /in both privacy\.hash and privacy\.drop/],
  ])('refuses %j at start, naming the setting', (env, message) => {
    expect(() => toConfig(loadConfig({ env }))).toThrow(ConfigError);
    expect(() => toConfig(loadConfig({ env }))).toThrow(message);
  });

  it('accepts a configured dimension, and the hash key is a secret', () => {
    const c = toConfig(loadConfig({ env: { HOOKWATCH_DIMENSIONS: 'team,workflow.name', HOOKWATCH_PRIVACY_DROP: 'workflow.name', HOOKWATCH_PRIVACY_HASH_KEY: 'super-secret-hash-key' } }));
    expect(c.privacy.drop).toEqual(['workflow.name']);
  });
});

describe('the hash key', () => {
  function tempStore(): { path: string; open: () => SqliteStore } {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-privacy-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'h.db');
    return { path, open: () => new SqliteStore({ path, synchronous: 'normal' }) };
  }

  it('unset: generated once and kept in the store, so digests are the same after a restart', async () => {
    const { open } = tempStore();
    const first = open();
    const before = (await openPrivacy({ hash: ['user.email'], hashKey: '', drop: [] }, first)).apply(event()).userEmail;
    await first.close();
    const second = open();
    cleanups.push(() => second.close());
    const after = (await openPrivacy({ hash: ['user.email'], hashKey: '', drop: [] }, second)).apply(event()).userEmail;
    expect(after).toBe(before);
  });

  it('set: used as given and never written to the store', async () => {
    const { path, open } = tempStore();
    const store = open();
    const p = await openPrivacy({ hash: ['user.email'], hashKey: 'operator-hash-key-42', drop: [] }, store);
    expect(p.apply(event()).userEmail).toBe(new Privacy({ hash: ['user.email'], drop: [], key: Buffer.from('operator-hash-key-42') }).apply(event()).userEmail);
    await store.close();
    const db = new DatabaseSync(path);
    expect(db.prepare('SELECT value FROM store_meta WHERE key = ?').get(HASH_KEY_META)).toBeUndefined();
    db.close();
  });
});
