/** The benchmark runner's command line: what it refuses before measuring, and the command its reports name. */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commandOf } from './run.ts';

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

  it('names in the report the command that writes it again, --out included', () => {
    expect(commandOf(false, undefined, 'latest')).toBe('npm run bench');
    expect(commandOf(true, undefined, 'quick')).toBe('npm run bench -- --quick --out quick');
    expect(commandOf(false, ['cardinality.ts'], 'cardinality')).toBe('npm run bench -- --only cardinality.ts --out cardinality');
    expect(commandOf(true, ['ingest.ts', 'load.ts'], 'latest')).toBe('npm run bench -- --quick --only ingest.ts,load.ts');
  });
});
