import { randomUUID } from 'node:crypto';
import { join } from 'node:path';

/** Hook events whose input Claude Code documents; others get the common fields only. */
export const KNOWN_EVENTS = [
  'SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PostToolUse', 'Stop', 'SubagentStop', 'Notification', 'PreCompact', 'SessionEnd',
] as const;

/**
 * Every hook event Claude Code fires, by the names settings files key hooks under: `--event` takes these (and any
 * event the settings file checked uses), so a typo is refused rather than simulated as an event that never fires.
 * Those not in KNOWN_EVENTS get the common input fields only.
 */
export const HOOK_EVENTS = [
  ...KNOWN_EVENTS,
  'PostToolUseFailure', 'PostToolBatch', 'PermissionRequest', 'PermissionDenied', 'UserPromptExpansion', 'StopFailure',
  'SubagentStart', 'PostCompact', 'Elicitation', 'ElicitationResult', 'TeammateIdle', 'TaskCreated', 'TaskCompleted',
  'Setup', 'InstructionsLoaded', 'CwdChanged', 'FileChanged', 'ConfigChange', 'WorktreeCreate', 'WorktreeRemove',
  'PreModelSwitch', 'PostModelSwitch', 'MessageDisplay', 'DirectoryAdded',
] as const;

/** The values of `source` a SessionStart hook can receive (and its matcher selects on). */
export const SESSION_START_SOURCES = ['startup', 'resume', 'clear', 'compact'] as const;

/** What varies between two runs of the same hook: the event and what it is about. */
export interface HookInputOptions {
  event: string;
  /** The project directory (cwd of the session and CLAUDE_PROJECT_DIR). */
  projectDir: string;
  /** Claude Code's data folder (~/.claude, or $CLAUDE_CONFIG_DIR), which holds the session's transcript. */
  configDir: string;
  sessionId?: string;
  /** SessionStart: startup, resume, clear or compact. */
  source?: string;
  /** UserPromptSubmit: the prompt. */
  prompt?: string;
  /** PreToolUse / PostToolUse: the tool the hook fires for. */
  toolName?: string;
  /** PreCompact: manual or auto. */
  trigger?: string;
}

/** Claude Code's project folder name for a working directory: every non-alphanumeric character becomes "-". */
export function projectFolderName(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, '-');
}

/** A realistic tool_input for the common tools, so hooks that inspect it take their usual path. */
function toolInput(toolName: string, projectDir: string): Record<string, unknown> {
  switch (toolName) {
    case 'Bash':
      return { command: 'git status', description: 'Show working tree status' };
    case 'Read':
      return { file_path: join(projectDir, 'README.md') };
    case 'Write':
      return { file_path: join(projectDir, 'hookwatch-check.txt'), content: 'written by hookwatch check\n' };
    case 'Edit':
      return { file_path: join(projectDir, 'README.md'), old_string: 'hookwatch', new_string: 'hookwatch', replace_all: false };
    case 'Grep':
      return { pattern: 'TODO', path: projectDir };
    case 'Glob':
      return { pattern: '**/*.ts', path: projectDir };
    default:
      return {};
  }
}

function toolResponse(toolName: string): Record<string, unknown> {
  if (toolName === 'Bash') return { stdout: 'On branch main\nnothing to commit, working tree clean', stderr: '', interrupted: false, isImage: false };
  return { success: true };
}

/**
 * The JSON Claude Code writes to a command hook's stdin for `event`: the common fields (session_id,
 * transcript_path, cwd, hook_event_name, permission_mode) plus the event's own.
 */
export function buildHookInput(options: HookInputOptions): Record<string, unknown> {
  const sessionId = options.sessionId ?? randomUUID();
  const input: Record<string, unknown> = {
    session_id: sessionId,
    transcript_path: join(options.configDir, 'projects', projectFolderName(options.projectDir), `${sessionId}.jsonl`),
    cwd: options.projectDir,
    permission_mode: 'default',
    hook_event_name: options.event,
  };
  const toolName = options.toolName ?? 'Bash';
  switch (options.event) {
    case 'SessionStart':
      input.source = options.source ?? 'startup';
      break;
    case 'UserPromptSubmit':
      input.prompt = options.prompt ?? 'Summarise the open issues in this repository.';
      break;
    case 'PreToolUse':
      input.tool_name = toolName;
      input.tool_input = toolInput(toolName, options.projectDir);
      input.tool_use_id = `toolu_hookwatch_${sessionId.slice(0, 8)}`;
      break;
    case 'PostToolUse':
      input.tool_name = toolName;
      input.tool_input = toolInput(toolName, options.projectDir);
      input.tool_response = toolResponse(toolName);
      input.tool_use_id = `toolu_hookwatch_${sessionId.slice(0, 8)}`;
      break;
    case 'Stop':
    case 'SubagentStop':
      input.stop_hook_active = false;
      break;
    case 'Notification':
      input.message = 'Claude needs your permission to use Bash';
      break;
    case 'PreCompact':
      input.trigger = options.trigger ?? 'manual';
      input.custom_instructions = '';
      break;
    case 'SessionEnd':
      input.reason = 'other';
      break;
    default:
      break;
  }
  return input;
}

/** The matcher query of a firing, as telemetry names hooks (`SessionStart:startup`, `PreToolUse:Bash`). */
export function matcherQuery(input: Record<string, unknown>): string | undefined {
  if (typeof input.source === 'string') return input.source;
  if (typeof input.tool_name === 'string') return input.tool_name;
  if (typeof input.trigger === 'string') return input.trigger;
  return undefined;
}

/**
 * Whether a settings matcher selects a firing's matcher query, as Claude Code decides whether to run the group:
 * no matcher, an empty one or `*` selects everything; names separated by `|` select those names exactly
 * (`Write` is not `MultiWrite`); anything else is a regular expression tested anywhere in the value, as Claude
 * Code tests it (`^mcp__`, `Edit.*` selects `NotebookEdit` too). A pattern that does not compile selects nothing.
 */
export function matcherSelects(matcher: string | undefined, query: string): boolean {
  if (matcher === undefined || matcher.trim() === '' || matcher.trim() === '*') return true;
  if (/^[A-Za-z0-9_|]+$/.test(matcher)) return matcher.split('|').includes(query);
  try {
    return new RegExp(matcher).test(query);
  } catch {
    return false;
  }
}

/**
 * A value a settings matcher would select: the first plain alternative of `Edit|Write` is `Edit`; a
 * wildcard or a pattern gives undefined (the caller's default applies).
 */
export function valueForMatcher(matcher: string | undefined): string | undefined {
  if (matcher === undefined) return undefined;
  const first = matcher.split('|')[0]?.trim() ?? '';
  return /^[A-Za-z0-9_-]+$/.test(first) ? first : undefined;
}
