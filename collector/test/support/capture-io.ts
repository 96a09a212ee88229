import type { ToolIO } from '../../src/tools/common/io.ts';

/** A ToolIO that records what a tool prints, for tests. */
export interface CapturedIO {
  io: ToolIO;
  stdout: () => string;
  stderr: () => string;
}

/** Captures stdout and stderr in memory; env defaults to a copy of process.env. */
export function captureIO(cwd: string, env: NodeJS.ProcessEnv = { ...process.env }): CapturedIO {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env, cwd },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  };
}
