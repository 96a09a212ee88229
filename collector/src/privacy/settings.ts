/**
 * The privacy settings (`privacy.*`): which attributes are digested or dropped before storage, and the digest
 * key, checked against what hookwatch stores (a typo would otherwise store the attribute in clear). A leaf:
 * config/ composes these rows and passes in the configured dimensions.
 */
import { ConfigError, type Setting, type SettingValues } from '../config/setting.ts';
import { shortSecretProblem } from '../config/values.ts';

/** Built-in attributes that identify people or their sessions and may be hashed or dropped. */
export const PRIVATE_BUILTINS = ['session.id', 'user.id', 'user.email', 'user.account_uuid', 'organization.id', 'terminal.type'] as const;

/** The shortest `privacy.hashKey` accepted; the generated one is 32 random bytes. */
export const MIN_HASH_KEY_CHARS = 16;

export const PRIVACY_SETTINGS: readonly Setting[] = [
  {
    key: 'privacy.hash', env: 'HOOKWATCH_PRIVACY_HASH', type: 'list', default: ['user.email'],
    description: 'Attributes replaced by a keyed HMAC-SHA256 digest (`hmac:` + 32 hex) before storage: grouping, breakdowns, filters and alert groupBy still work, and a filter given in cleartext is digested the same way, but the cleartext never reaches disk or the API. Any of session.id, user.id, user.email, user.account_uuid, organization.id, terminal.type and the configured dimensions. Empty: nothing hashed.',
  },
  {
    key: 'privacy.hashKey', env: 'HOOKWATCH_PRIVACY_HASH_KEY', type: 'string', default: '', secret: true,
    validate: (v) => shortSecretProblem(String(v), MIN_HASH_KEY_CHARS),
    description: 'Key of the privacy.hash digests: at least 16 characters (a shorter key is refused at start: the digests of guessable values such as e-mail addresses would be as easy to reverse as the key is to guess), e.g. from `openssl rand -hex 32`. Unset: one is generated once and kept in the store (shared by replicas on PostgreSQL), so digests stay stable across restarts; set it to keep the key out of the database. Changing it changes every digest from then on.',
  },
  {
    key: 'privacy.drop', env: 'HOOKWATCH_PRIVACY_DROP', type: 'list', default: [],
    description: 'Attributes removed before storage (same choices as privacy.hash), e.g. `user.account_uuid,organization.id`. One listed here is no longer hashed by privacy.hash\'s default (`user.email`); one privacy.hash is set to list too is refused at start, naming it.',
  },
];

export interface PrivacyConfig {
  hash: string[];
  hashKey: string;
  drop: string[];
}

/** Typed `privacy.*`; `dimensions` are the configured extra attributes, which may be hashed or dropped too. */
export function privacyConfig(r: SettingValues, dimensions: readonly string[]): PrivacyConfig {
  const drop = r.list('privacy.drop');
  // An attribute hashed by default and listed in privacy.drop is dropped, as asked: stored less than hashed. Set
  // in both, it is refused (privacyProblem): one of the two was not meant.
  const hash = r.isDefault('privacy.hash') ? r.list('privacy.hash').filter((k) => !drop.includes(k)) : r.list('privacy.hash');
  const problem = privacyProblem(hash, drop, dimensions);
  if (problem) throw new ConfigError(problem);
  return { hash, hashKey: r.string('privacy.hashKey'), drop };
}

/** Checks privacy.hash and privacy.drop against what is stored; returns a message naming the problem, or undefined. */
export function privacyProblem(hash: readonly string[], drop: readonly string[], dimensions: readonly string[]): string | undefined {
  const storable = [...PRIVATE_BUILTINS, ...dimensions];
  for (const [setting, keys] of [['privacy.hash', hash], ['privacy.drop', drop]] as const) {
    for (const k of keys) {
      // A typo here would silently store the attribute in clear: refuse it.
      if (!storable.includes(k)) return `${setting}: ${JSON.stringify(k)} is not an attribute hookwatch stores; use one of ${storable.join(', ')}`;
    }
  }
  const both = hash.find((k) => drop.includes(k));
  if (both) return `${JSON.stringify(both)} is in both privacy.hash and privacy.drop; choose one (an attribute hashed by default is dropped when privacy.drop lists it and privacy.hash is not set)`;
  return undefined;
}
