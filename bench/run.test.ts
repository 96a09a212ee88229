/** The benchmark runner's command line: what it refuses before measuring, and the command its reports name. */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commandOf, MODULES } from './run.ts';

const RUN = fileURLToPath(new URL('./run.ts', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

function runner(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [RUN, ...args], { encoding: 'utf8', timeout: 20_000 });
}

describe('npm run bench', () => {
  it('refuses an argument it does not take before measuring anything, so a typo does not start a full run over latest.md', () => {
    const before = existsSync(RESULTS) ? readdirSync(RESULTS).sort() : [];
    for (const args of [['--quik'], ['--quick', 'extra'], ['--out']]) {
      const r = runner(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toContain('Usage: npm run bench');
      expect(r.stderr).not.toContain('running');
    }
    expect(existsSync(RESULTS) ? readdirSync(RESULTS).sort() : []).toEqual(before);
  });

  it('prints its usage for --help and exits 0 without measuring', () => {
    const r = runner('--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('--out NAME');
    expect(r.stderr).toBe('');
  });

  it.each(MODULES)('bench/%s run on its own prints its usage for --help, and refuses an option it does not take, without measuring', (module) => {
    const file = fileURLToPath(new URL(`./${module}`, import.meta.url));
    const before = existsSync(RESULTS) ? readdirSync(RESULTS).sort() : [];
    const help = spawnSync(process.execPath, [file, '--help'], { encoding: 'utf8', timeout: 20_000 });
    expect(help.stdout).toMatch(new RegExp(`^Usage: node bench/${module.replace('.', '\\.')}`));
    expect(help.stdout).toContain('--quick');
    expect(help.stderr).toBe('');
    expect(help.status).toBe(0);
    const typo = spawnSync(process.execPath, [file, '--quik'], { encoding: 'utf8', timeout: 20_000 });
    expect(typo.stderr).toContain("bench: Unknown option '--quik'");
    expect(typo.stderr).toContain(`Usage: node bench/${module}`);
    expect(typo.stderr).not.toContain('    at ');
    expect(typo.status).toBe(2);
    expect(existsSync(RESULTS) ? readdirSync(RESULTS).sort() : []).toEqual(before);
  });

  it.each(['alerts.ts', 'replicas.ts'])('bench/%s refuses a number of trials that is no whole number of at least 1, without measuring', (module) => {
    const file = fileURLToPath(new URL(`./${module}`, import.meta.url));
    for (const trials of ['abc', '0', '2.5']) {
      const r = spawnSync(process.execPath, [file, '--trials', trials], { encoding: 'utf8', timeout: 20_000 });
      expect(r.stderr).toContain(`bench: --trials ${trials}: give a whole number of trials, at least 1`);
      expect(r.stdout).toBe('');
      expect(r.status).toBe(2);
    }
  });

  it('names in the report the command that writes it again, --out included', () => {
    expect(commandOf(false, undefined, 'latest')).toBe('npm run bench');
    expect(commandOf(true, undefined, 'quick')).toBe('npm run bench -- --quick --out quick');
    expect(commandOf(false, ['cardinality.ts'], 'cardinality')).toBe('npm run bench -- --only cardinality.ts --out cardinality');
    expect(commandOf(true, ['ingest.ts', 'load.ts'], 'latest')).toBe('npm run bench -- --quick --only ingest.ts,load.ts');
  });
});
