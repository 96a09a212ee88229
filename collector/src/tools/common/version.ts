import packageJson from '../../../../package.json' with { type: 'json' };

/** hookwatch's version, reported as the instrumentation scope version of events the tools send. */
export const HOOKWATCH_VERSION: string = packageJson.version;
