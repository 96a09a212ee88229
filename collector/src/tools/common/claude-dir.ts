import { join, resolve } from 'node:path';

/**
 * The folder Claude Code keeps its data in (transcripts under `projects/`): $CLAUDE_CONFIG_DIR when that is set
 * (relative to the working directory), else ~/.claude.
 */
export function claudeConfigDir(home: string, io: { cwd: string; env: NodeJS.ProcessEnv }): string {
  const configDir = io.env.CLAUDE_CONFIG_DIR;
  return configDir ? resolve(io.cwd, configDir) : join(home, '.claude');
}
