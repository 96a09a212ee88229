/** Finds (or installs once into a cache folder) the pinned Claude Code client for the live tests. */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The client version the reference and the fixtures were taken with: the first with every size attribute plus later fixes. */
export const CLAUDE_CODE_VERSION = '2.1.332';

/**
 * The `claude` binary of version 2.1.332: HOOKWATCH_CLAUDE_BIN, else /opt/claude-code, else a cache folder
 * (HOOKWATCH_CLAUDE_CACHE or ~/.cache/hookwatch/claude-code-2.1.332), installed there with npm when missing
 * (a ~400 MB download, once). Throws when the binary there reports another version.
 */
export async function locateClaudeCode(): Promise<string> {
  const cache = process.env.HOOKWATCH_CLAUDE_CACHE ?? join(homedir(), '.cache', 'hookwatch', `claude-code-${CLAUDE_CODE_VERSION}`);
  const candidates = [process.env.HOOKWATCH_CLAUDE_BIN, '/opt/claude-code/node_modules/.bin/claude', join(cache, 'node_modules', '.bin', 'claude')].filter((c): c is string => c !== undefined && c !== '');
  let found = candidates.find((c) => existsSync(c));
  if (found === undefined) {
    // Pinned: an unpinned install on an older Node silently picks a version without the size attributes.
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefix', cache, `@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}`], { timeout: 15 * 60_000, maxBuffer: 16 * 1024 * 1024 });
    found = join(cache, 'node_modules', '.bin', 'claude');
  }
  const { stdout } = await run(found, ['--version'], { timeout: 60_000 });
  if (!stdout.startsWith(CLAUDE_CODE_VERSION)) throw new Error(`${found} is Claude Code ${stdout.trim()}, expected ${CLAUDE_CODE_VERSION}`);
  return found;
}
