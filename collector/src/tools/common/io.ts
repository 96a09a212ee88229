import type { Readable } from 'node:stream';

/**
 * What a CLI tool may touch: its output streams, its environment and its working directory. Passing them in
 * (instead of using `process`) lets tests run a tool in-process and read exactly what a user would see.
 */
export interface ToolIO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** What `-` reads (scan -); the process's stdin when not given. */
  stdin?: Readable;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** Exit codes shared by the tools: 0 clean, 1 findings (the check failed loudly), 2 usage or input error. */
export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_USAGE = 2;
/** The findings could not be sent to the hookwatch server. */
export const EXIT_SEND_FAILED = 3;
/** Nothing was found lost, but part of the input was skipped unread (a line over the line limit): the result is unknown. */
export const EXIT_INCOMPLETE = 4;
