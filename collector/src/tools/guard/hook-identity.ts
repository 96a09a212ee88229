import { matcherQuery } from '../check/hook-input.ts';
import { jsonMembers } from '../../json-string.ts';

/** Which hook fired, from the input JSON Claude Code wrote to the hook's stdin; telemetry names it the same way. */
export interface HookIdentity {
  hookEvent: string;
  /** `SessionStart:startup`, `PreToolUse:Bash`, or the event alone when there is no matcher query. */
  hookName: string;
  sessionId: string | undefined;
}

/**
 * The string members of the outermost object of a JSON text that may be cut short: only the head of a large hook
 * input is kept (a PostToolUse for a Write of a 2 MB file carries the file), while the fields naming the hook come
 * first. Strings inside nested values (a tool's input quoting `"source":"startup"`) are not members and are skipped.
 */
export function topLevelStrings(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  const open = text.search(/\S/);
  if (open === -1 || text[open] !== '{') return fields;
  for (const [key, { start, end }] of jsonMembers(text, open)) {
    if (text[start] !== '"') continue;
    try {
      fields[key] = JSON.parse(text.slice(start, end)) as string;
    } catch {
      // Not a JSON string (a bad escape): not read.
    }
  }
  return fields;
}

/** The hook named by `input`; "unknown" when the input is not Claude Code's hook JSON (a manual run). */
export function hookIdentity(input: string): HookIdentity {
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch {
    // Only the head of a large input is kept: its first members still name the hook.
    parsed = topLevelStrings(input);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { hookEvent: 'unknown', hookName: 'unknown', sessionId: undefined };
  const fields = parsed as Record<string, unknown>;
  const hookEvent = typeof fields.hook_event_name === 'string' && fields.hook_event_name !== '' ? fields.hook_event_name : 'unknown';
  const query = matcherQuery(fields);
  return {
    hookEvent,
    hookName: query === undefined || query === '' ? hookEvent : `${hookEvent}:${query}`,
    sessionId: typeof fields.session_id === 'string' ? fields.session_id : undefined,
  };
}
