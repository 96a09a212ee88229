import packageJson from '../../package.json' with { type: 'json' };

/**
 * hookwatch's version, one place for all: the service's build info and instrumentation scope, the CLI's
 * --version, and the scope version of events the tools send. Imports nothing but package.json, so the hook
 * guard can read it without loading service code.
 */
export const HOOKWATCH_VERSION: string = packageJson.version;
