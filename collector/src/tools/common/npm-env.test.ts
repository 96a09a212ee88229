import { describe, expect, it } from 'vitest';

import { leaveNpmEnvironment, startedByNpm } from './npm-env.ts';

const GYP = '/usr/lib/node_modules/npm/node_modules/@npmcli/run-script/lib/node-gyp-bin';
/** What npm 11 puts first on PATH when it runs a script in /home/dev/hookwatch. */
const RUN_IN_PACKAGE = ['/home/dev/hookwatch/node_modules/.bin', '/home/dev/node_modules/.bin', '/home/node_modules/.bin', '/node_modules/.bin', GYP];

/** PATH after leaveNpmEnvironment, given a PATH (as entries) and npm's other variables. */
function pathLeft(entries: string[], env: NodeJS.ProcessEnv = {}): string {
  const changed: NodeJS.ProcessEnv = { ...env, PATH: entries.join(':') };
  leaveNpmEnvironment(changed);
  return changed['PATH'] ?? '';
}

describe('leaveNpmEnvironment', () => {
  it('takes out what npm run put before the PATH it was given, and nothing of the user\'s', () => {
    expect(pathLeft([...RUN_IN_PACKAGE, '/opt/mine', '/usr/bin', '/bin'])).toBe('/opt/mine:/usr/bin:/bin');
    // A user's node_modules/.bin first on PATH (a Node 24 of their own) stays first.
    expect(pathLeft([...RUN_IN_PACKAGE, '/home/dev/tools/node_modules/.bin', '/usr/bin'])).toBe('/home/dev/tools/node_modules/.bin:/usr/bin');
    // The same folder as one npm added, put there by the user, stays too: what comes after node-gyp-bin is theirs.
    expect(pathLeft([...RUN_IN_PACKAGE, '/home/dev/hookwatch/node_modules/.bin', '/usr/bin'])).toBe('/home/dev/hookwatch/node_modules/.bin:/usr/bin');
    expect(pathLeft([...RUN_IN_PACKAGE, '', '/usr/bin', '/usr/bin'])).toBe(':/usr/bin:/usr/bin');
  });

  it('takes out the bin folders npx and npm exec put first, the global one included', () => {
    const npx = ['/home/dev/.npm/_npx/b04575b7dfa977eb/node_modules/.bin', ...RUN_IN_PACKAGE];
    expect(pathLeft([...npx, '/usr/bin'])).toBe('/usr/bin');
    // From a subfolder, npm exec finds the bin further up and puts that folder first.
    const fromSub = ['/home/dev/hookwatch/node_modules/.bin', '/home/dev/hookwatch/sub/node_modules/.bin', ...RUN_IN_PACKAGE];
    expect(pathLeft([...fromSub, '/usr/bin'])).toBe('/usr/bin');
    const global = ['/usr/local/bin', ...RUN_IN_PACKAGE];
    expect(pathLeft([...global, '/usr/local/bin', '/usr/bin'], { npm_config_global_prefix: '/usr/local' })).toBe('/usr/local/bin:/usr/bin');
    // Without npm's word for it, a folder before npm's own is not taken for one of its bin folders.
    expect(pathLeft([...global, '/usr/bin'], { npm_config_global_prefix: '/opt/npm' })).toBe([...global, '/usr/bin'].join(':'));
  });

  it('takes out what an npm that started npm put first as well, but not past an entry the user put between them', () => {
    const outer = ['/home/dev/app/node_modules/.bin', '/home/dev/node_modules/.bin', '/home/node_modules/.bin', '/node_modules/.bin', GYP];
    expect(pathLeft([...RUN_IN_PACKAGE, ...outer, '/usr/bin'])).toBe('/usr/bin');
    expect(pathLeft([...RUN_IN_PACKAGE, '/opt/mine', ...outer, '/usr/bin'])).toBe(['/opt/mine', ...outer, '/usr/bin'].join(':'));
  });

  it('leaves a PATH npm did not build as it is', () => {
    for (const entries of [['/usr/bin', '/bin'], ['/home/dev/hookwatch/node_modules/.bin', '/usr/bin'], ['/node_modules/.bin', '/usr/bin'], [GYP, '/usr/bin'], ['/opt/mine', '/node_modules/.bin', GYP, '/usr/bin']]) {
      expect(pathLeft(entries)).toBe(entries.join(':'));
    }
  });

  it('takes out the npm_* variables, INIT_CWD and npm\'s NODE, and leaves the user\'s own', () => {
    const env: NodeJS.ProcessEnv = {
      PATH: [...RUN_IN_PACKAGE, '/usr/bin'].join(':'),
      npm_lifecycle_event: 'hookwatch',
      npm_config_global_prefix: '/usr',
      npm_package_name: 'hookwatch',
      npm_node_execpath: '/usr/bin/node',
      NODE: '/usr/bin/node',
      INIT_CWD: '/home/dev/project',
      NPM_CONFIG_REGISTRY: 'https://registry.example',
      EDITOR: 'vi',
      HOME: '/home/dev',
    };
    leaveNpmEnvironment(env);
    expect(env).toEqual({ PATH: '/usr/bin', NPM_CONFIG_REGISTRY: 'https://registry.example', EDITOR: 'vi', HOME: '/home/dev' });
    const ownNode: NodeJS.ProcessEnv = { NODE: '/opt/node24/bin/node', npm_node_execpath: '/usr/bin/node' };
    leaveNpmEnvironment(ownNode);
    expect(ownNode).toEqual({ NODE: '/opt/node24/bin/node' });
  });
});

describe('startedByNpm', () => {
  it('is true for npm run hookwatch, npm exec hookwatch and npx hookwatch, not for what else npm started', () => {
    expect(startedByNpm({ npm_lifecycle_event: 'hookwatch', npm_command: 'run-script' })).toBe(true);
    expect(startedByNpm({ npm_lifecycle_event: 'npx', npm_command: 'exec', npm_lifecycle_script: "'hookwatch'" })).toBe(true);
    expect(startedByNpm({ npm_lifecycle_event: 'npx', npm_command: 'exec', npm_lifecycle_script: 'hookwatch check --settings x' })).toBe(true);
    expect(startedByNpm({ npm_lifecycle_event: 'test', npm_command: 'test' })).toBe(false);
    expect(startedByNpm({ npm_lifecycle_event: 'npx', npm_command: 'exec', npm_lifecycle_script: "'vitest'" })).toBe(false);
    expect(startedByNpm({ npm_lifecycle_event: 'npx', npm_command: 'exec', npm_lifecycle_script: "'hookwatch-other'" })).toBe(false);
    expect(startedByNpm({})).toBe(false);
  });
});
