/** The oldest Node.js major hookwatch runs on (package.json "engines"). */
export const MIN_NODE_MAJOR: number;
/** Why this Node.js cannot run hookwatch, with what to do instead (`root`: the package folder); undefined when it can. */
export function nodeVersionProblem(version?: string, execPath?: string, root?: string): string | undefined;
